package luavm

import (
	lua "github.com/yuin/gopher-lua"
	"strings"
)

// prelude is compiled once per VM. It returns the body every pooled message
// coroutine runs, and the pcall and xpcall that replace the base library's.
//
// The body is skynet's co_create loop: each resume hands it a function and
// its arguments; it runs them and yields DONE with the results, then waits
// for the next function. A tail call keeps the stack flat forever.
//
// gopher-lua's pcall runs the protected function in a nested Go call, out
// of which a coroutine cannot yield, so shield.call inside pcall would fail.
// These versions run the function in a coroutine of its own and pass every
// yield up to the message coroutine and every resume back down (as Lua's
// coxpcall does), so `pcall(shield.call, ...)` suspends like a bare call.
const prelude = `
local DONE = ...
local create, resume, yield, status = coroutine.create, coroutine.resume, coroutine.yield, coroutine.status
local select, error, type = select, error, type

local function loop(...)
  return loop(yield(DONE, (...)(select(2, ...))))
end

local function step(co, ok, ...)
  if status(co) == "dead" then return ok, ... end
  return step(co, resume(co, yield(...)))
end

local function pcall(f, ...)
  if type(f) ~= "function" then
    return false, "attempt to call a " .. type(f) .. " value"
  end
  local co = create(f)
  return step(co, resume(co, ...))
end

local function xstep(co, handler, ok, ...)
  if status(co) == "dead" then
    if ok then return true, ... end
    return false, handler((...))
  end
  return xstep(co, handler, resume(co, yield(...)))
end

local function xpcall(f, handler)
  if type(f) ~= "function" then
    return false, handler("attempt to call a " .. type(f) .. " value")
  end
  local co = create(f)
  return xstep(co, handler, resume(co))
end

local function wrapped(ok, ...)
  if ok then return ... end
  error((...), 0)
end

local function wrap(f)
  local co = create(f)
  return function(...) return wrapped(resume(co, ...)) end
end

return loop, pcall, xpcall, wrap
`

// installCoroutines replaces coroutine.create so that a new thread shares
// the VM's interrupt instead of getting a child context: gopher-lua's
// NewThread derives a cancellable child of its parent's context, which the
// first interrupt would cancel for good, and which costs a goroutine under
// a parent that is not a standard context. coroutine.wrap, pcall and xpcall
// come from the prelude, built on this create. It must run before the
// prelude is compiled.
func (vm *VM) installCoroutines() {
	co := vm.L.G.Global.RawGetString("coroutine").(*lua.LTable)
	orig := co.RawGetString("create").(*lua.LFunction)
	co.RawSetString("create", vm.L.NewFunction(func(L *lua.LState) int {
		fn := L.CheckFunction(1)
		ctx := L.RemoveContext()
		L.Push(orig)
		L.Push(fn)
		L.Call(1, 1)
		if ctx != nil {
			L.SetContext(ctx)
		}
		if th, ok := L.Get(-1).(*lua.LState); ok {
			th.SetContext(vm.intr)
		}
		return 1
	}))
}

// compilePrelude runs the prelude and installs what it returns.
func (vm *VM) compilePrelude() error {
	fn, err := vm.L.Load(strings.NewReader(prelude), builtinChunk+"prelude")
	if err != nil {
		return err
	}
	vm.L.Push(fn)
	vm.L.Push(vm.done)
	if err := vm.L.PCall(1, 4, nil); err != nil {
		return err
	}
	g := vm.L.G.Global
	vm.body = vm.L.Get(-4).(*lua.LFunction)
	g.RawSetString("pcall", vm.L.Get(-3))
	g.RawSetString("xpcall", vm.L.Get(-2))
	g.RawGetString("coroutine").(*lua.LTable).RawSetString("wrap", vm.L.Get(-1))
	vm.L.Pop(4)
	return nil
}

// newThread makes a message coroutine under the VM's interrupt. The main
// state carries no context outside of load, so NewThread derives none.
func (vm *VM) newThread() *lua.LState {
	th, _ := vm.L.NewThread()
	th.SetContext(vm.intr)
	return th
}
