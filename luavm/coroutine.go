package luavm

import (
	lua "github.com/yuin/gopher-lua"
)

// prelude is compiled once per VM. It returns the pcall, xpcall,
// coroutine.resume and coroutine.wrap that replace the base library's, and
// the trampoline a Go function's task runs through.
// (Every message runs in a pooled coroutine, its handler started at the
// coroutine's first frame: task.go, gopher-lua's ResumePooled.)
//
// gopher-lua's pcall runs the protected function in a nested Go call, out
// of which a coroutine cannot yield, so shield.call inside pcall would fail.
// These versions run the function in a coroutine of its own and pass every
// yield up to the message coroutine and every resume back down (as Lua's
// coxpcall does), so `pcall(shield.call, ...)` suspends like a bare call.
//
// A coroutine the script made itself is different: its own yields go to
// whoever resumed it, but a shield function suspending inside it (it
// yields WAIT) must suspend the whole task, as skynet.coroutine does. So
// resume and wrap pass WAIT yields up to the message coroutine and hand
// the reply back down, and return every other yield to their caller.
var preludeChunk = &builtin{name: "prelude", src: `
local WAIT, isgo, gpcall, gxpcall = ...
local create, resume, yield, status = coroutine.create, coroutine.resume, coroutine.yield, coroutine.status
local error, type = error, type

local function step(co, ok, ...)
  if status(co) == "dead" then return ok, ... end
  return step(co, resume(co, yield(...)))
end

local function pcall(f, ...)
  if type(f) ~= "function" then
    return false, "attempt to call a " .. type(f) .. " value"
  end
  -- A Go function cannot suspend (shield's suspending functions are Lua
  -- wrappers), and gopher-lua never marks a coroutine whose body is a Go
  -- function dead: run it under the native pcall.
  if isgo(f) then return gpcall(f, ...) end
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
  if isgo(f) then return gxpcall(f, handler) end
  local co = create(f)
  return xstep(co, handler, resume(co))
end

local function rstep(co, ok, ...)
  if ok and (...) == WAIT and status(co) == "suspended" then
    return rstep(co, resume(co, yield(...)))
  end
  return ok, ...
end

local function cresume(co, ...)
  return rstep(co, resume(co, ...))
end

local function wrapped(ok, ...)
  if ok then return ... end
  error((...), 0)
end

local function wrap(f)
  local co = create(f)
  return function(...) return wrapped(rstep(co, resume(co, ...))) end
end

-- A task whose function is a Go function runs it through this, so that
-- the coroutine's first frame is a Lua one (task.go, VM.start).
local function callgo(f, ...)
  return f(...)
end

return pcall, xpcall, cresume, wrap, callgo
`}

// installCoroutines replaces coroutine.create so that a new thread shares
// the VM's interrupt instead of getting a child context: gopher-lua's
// NewThread derives a cancellable child of its parent's context, which the
// first interrupt would cancel for good, and which costs a goroutine under
// a parent that is not a standard context. It also bounds how
// deep coroutines nest. coroutine.resume and coroutine.wrap, pcall and
// xpcall come from the prelude, built on these. It must run before the
// prelude is compiled.
func (vm *VM) installCoroutines() {
	co := vm.l.G.Global.RawGetString("coroutine").(*lua.LTable)
	orig := co.RawGetString("create").(*lua.LFunction)
	co.RawSetString("create", vm.l.NewFunction(func(L *lua.LState) int {
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
	// Each resume runs the coroutine in a nested Go call, and every
	// coroutine has a call stack of its own, so the Lua stack limit does
	// not bound `local function f() pcall(f) end`: the Go stack would grow
	// until the process dies. Lua bounds this nesting by its C stack
	// (LUAI_MAXCCALLS); this does the same.
	resume := co.RawGetString("resume").(*lua.LFunction).GFunction
	co.RawSetString("resume", vm.l.NewFunction(func(L *lua.LState) int {
		if vm.nesting >= maxNesting {
			L.RaiseError("stack overflow (coroutines and pcalls nested deeper than %d)", maxNesting)
		}
		// Not a thread: the original resume raises its usual error.
		th, _ := L.Get(1).(*lua.LState)
		switch {
		case th == nil:
		case refuseNormal && th != L && isAncestor(L, th):
			// gopher-lua refuses to resume only the running thread, not
			// one that is waiting for a coroutine it resumed (status
			// "normal", in Lua 5.1 an error): resuming such a thread
			// re-enters its Go frames and ends in a nil dereference that
			// takes the VM down.
			return refuse(L, "cannot resume non-suspended coroutine")
		case vm.suspendedCo[th] != nil:
			// A coroutine a suspended message waits in (a script kept
			// coroutine.running(), in the handler or in a pcall) waits
			// for the message's reply or timer: only the VM resumes it,
			// or the message would go on inside another one and find
			// nothing to give its reply to.
			return refuse(L, "cannot resume a message's coroutine")
		}
		vm.nesting++
		defer func() { vm.nesting-- }()
		n := resume(L)
		// th passed a suspension up (it yielded WAIT, which every resume
		// in the prelude hands on to the message's coroutine): the task
		// now waits in it too.
		if th != nil && n >= 2 && vm.current != nil && L.Get(-n) == lua.LTrue && L.Get(-n+1) == vm.wait && vm.l.Status(th) == "suspended" {
			vm.suspend(vm.current, th)
		}
		return n
	}))
	// gopher-lua's status says "normal" only for the running thread's
	// direct resumer; Lua's says it for every thread up the chain.
	co.RawSetString("status", vm.l.NewFunction(func(L *lua.LState) int {
		th := L.CheckThread(1)
		if !th.Dead && th != L.G.CurrentThread && isAncestor(L, th) {
			L.Push(lua.LString("normal"))
			return 1
		}
		L.Push(lua.LString(L.Status(th)))
		return 1
	}))
}

// refuse is coroutine.resume's answer for a thread it will not resume:
// false and why, as for a dead one.
func refuse(L *lua.LState, why string) int {
	L.Push(lua.LFalse)
	L.Push(lua.LString(why))
	return 2
}

// refuseNormal turns the check of a "normal" thread in coroutine.resume
// on; only a test turns it off, to reach the crash it prevents.
var refuseNormal = true

// isAncestor reports whether th is one of the threads that resumed L, the
// running thread, directly or through others: a thread waiting in resume.
func isAncestor(L, th *lua.LState) bool {
	for p := L.Parent; p != nil; p = p.Parent {
		if p == th {
			return true
		}
	}
	return false
}

// maxNesting bounds coroutines resumed inside one another (pcall and
// xpcall each run one), as Lua 5.1's LUAI_MAXCCALLS does.
const maxNesting = 200

// compilePrelude runs the prelude and installs what it returns.
func (vm *VM) compilePrelude() error {
	vm.l.Push(preludeChunk.function(vm.l))
	g := vm.l.G.Global
	vm.l.Push(vm.wait)
	vm.l.Push(vm.l.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LBool(L.CheckFunction(1).IsG))
		return 1
	}))
	vm.l.Push(g.RawGetString("pcall"))
	vm.l.Push(g.RawGetString("xpcall"))
	if err := vm.l.PCall(4, 5, nil); err != nil {
		return err
	}
	co := g.RawGetString("coroutine").(*lua.LTable)
	g.RawSetString("pcall", vm.l.Get(-5))
	g.RawSetString("xpcall", vm.l.Get(-4))
	co.RawSetString("resume", vm.l.Get(-3))
	co.RawSetString("wrap", vm.l.Get(-2))
	vm.callGo = vm.l.Get(-1).(*lua.LFunction)
	vm.l.Pop(5)
	return nil
}

// newThread makes a message coroutine under the VM's interrupt. The main
// state carries no context outside of load, so NewThread derives none.
func (vm *VM) newThread() *lua.LState {
	th, _ := vm.l.NewThread()
	th.SetContext(vm.intr)
	return th
}
