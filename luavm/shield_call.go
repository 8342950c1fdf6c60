package luavm

import (
	"fmt"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/tracing"
)

// address reads shield.send/call's first argument: "service" or
// {service = "player", key = player_id}.
func address(L *lua.LState, n int) Address {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return Address{Service: string(v)}
	case *lua.LTable:
		if id, ok := v.RawGetString("room").(lua.LString); ok {
			return Address{Room: string(id)}
		}
		svc, ok := v.RawGetString("service").(lua.LString)
		if !ok {
			L.ArgError(n, "address table needs service = \"name\"")
		}
		key := v.RawGetString("key")
		if key == lua.LNil {
			return Address{Service: string(svc)}
		}
		return Address{Service: string(svc), Key: lua.LVAsString(key), HasKey: true}
	}
	L.ArgError(n, "address must be a service name or {service = name, key = key}")
	return Address{}
}

// callArgs copies arguments from..top out of the VM under the JSON
// mapping (see EncodeValue); one that cannot leave the VM (a function, a
// coroutine, userdata other than shield.null) raises at the caller.
func (vm *VM) callArgs(L *lua.LState, from int) [][]byte {
	top := L.GetTop()
	if top < from {
		return nil
	}
	args := make([][]byte, 0, top-from+1)
	for i := from; i <= top; i++ {
		b, err := EncodeValue(L, L.Get(i))
		if err != nil {
			L.ArgError(i, "cannot be sent to another service: "+err.Error())
		}
		args = append(args, b)
	}
	return args
}

// running returns the task being resumed, or raises: the suspending
// functions only make sense inside a handler, and only where a yield can
// reach the message's coroutine. Raised before anything is registered or
// sent, so a call the script sees fail has no effect elsewhere.
func (vm *VM) running(L *lua.LState, name string) *task {
	if vm.current == nil || vm.host == nil {
		L.RaiseError("%s can only be used while handling a message%s: the script's top level runs at load, before any message; do this in init",
			name, scriptLine(L))
	}
	if vm.current.noSuspend {
		L.RaiseError("%s cannot suspend inside room_tick: use shield.send, or a shield.timeout callback", name)
	}
	if !L.CanYield() {
		// Inside Lua that a Go function called (a sort comparator, a
		// gsub callback, a metamethod, a for iterator, require): Lua
		// 5.1's error, which gopher-lua patch 11 raises for the yield.
		L.RaiseError("attempt to yield across metamethod/C-call boundary")
	}
	return vm.current
}

// shield.send(addr, method, ...) -> true | nil, code. It never waits, and
// carries no budget: the callee runs under its own handler_timeout,
// whatever happens to the sender (SPEC §6).
func (vm *VM) luaSend(L *lua.LState) int {
	if vm.host == nil || vm.current == nil {
		L.RaiseError("shield.send can only be used while handling a message (at load time, use init)")
	}
	c := &Call{From: vm.host.Self(), To: address(L, 1), Method: L.CheckString(2), Args: vm.callArgs(L, 3)}
	span := vm.traceOut(vm.current, "shield.send "+c.To.Service+"."+c.Method, tracing.Producer,
		tracing.String("shield.service", c.To.Service), tracing.String("shield.method", c.Method))
	c.Trace = span.Context()
	err := vm.host.Route(c)
	span.End(outcome(err), time.Now())
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Code))
		return 2
	}
	L.Push(lua.LTrue)
	return 1
}

// shield.call's Go half: it yields until the reply, then the Lua half
// (check) returns the results or raises the error.
func (vm *VM) luaCall(L *lua.LState) int {
	t := vm.running(L, "shield.call")
	c := &Call{From: vm.host.Self(), To: address(L, 1), Method: L.CheckString(2), Args: vm.callArgs(L, 3), Deadline: t.deadline, Gen: vm.gen}
	id, ok := vm.addPending(&pending{kind: pendCall, task: t})
	if !ok {
		return vm.fail(L, codes.Busy, "max_pending (%d) timers and calls already in flight", vm.spec.MaxPending)
	}
	c.ID = id
	p := vm.pending[id]
	p.span = vm.traceOut(t, "shield.call "+c.To.Service+"."+c.Method, tracing.Client,
		tracing.String("shield.service", c.To.Service), tracing.String("shield.method", c.Method))
	c.Trace = p.span.Context()
	if err := vm.host.Route(c); err != nil {
		p.span.End(outcome(err), time.Now())
		delete(vm.pending, id)
		return vm.fail(L, err.Code, "%s", err.Message)
	}
	t.waiting = id
	return L.Yield(vm.wait)
}

// fail returns (false, error) to a suspending function's check.
func (vm *VM) fail(L *lua.LState, code codes.Code, format string, args ...any) int {
	L.Push(lua.LFalse)
	L.Push(vm.errorValue(code, fmt.Sprintf(format, args...)))
	return 2
}

// shield.sleep(ms): suspends the calling task only.
func (vm *VM) luaSleep(L *lua.LState) int {
	t := vm.running(L, "shield.sleep")
	ms := L.CheckNumber(1)
	p := &pending{kind: pendSleep, task: t}
	id, ok := vm.addPending(p)
	if !ok {
		return vm.fail(L, codes.Busy, "max_pending (%d) timers and calls already in flight", vm.spec.MaxPending)
	}
	p.timer = vm.timers.push(time.Now().Add(millis(ms)), timerSleep, id)
	t.waiting = id
	return L.Yield(vm.wait)
}

// shield.timeout(ms, fn) -> id: fn runs later as a task of its own.
func (vm *VM) luaTimeout(L *lua.LState) int {
	ms := L.CheckNumber(1)
	fn := L.CheckFunction(2)
	p := &pending{kind: pendTimeout, fn: fn}
	id, ok := vm.addPending(p)
	if !ok {
		vm.raise(L, codes.Busy, "max_pending (%d) timers and calls already in flight", vm.spec.MaxPending)
	}
	p.timer = vm.timers.push(time.Now().Add(millis(ms)), timerTimeout, id)
	L.Push(lua.LNumber(id))
	return 1
}

// shield.cancel(id) -> true when the timer was still pending.
func (vm *VM) luaCancel(L *lua.LState) int {
	id := uint64(L.CheckNumber(1))
	p, ok := vm.pending[id]
	ok = ok && p.kind == pendTimeout
	if ok {
		delete(vm.pending, id)
		vm.timers.remove(p.timer)
	}
	L.Push(lua.LBool(ok))
	return 1
}

func millis(ms lua.LNumber) time.Duration {
	if ms < 0 {
		ms = 0
	}
	return time.Duration(float64(ms) * float64(time.Millisecond))
}

// scriptLine is " (file:line)" of the innermost frame of the service's own
// code on L's stack, or "" when there is none: the runtime's chunks and Go
// functions are skipped.
func scriptLine(L *lua.LState) string {
	for level := 0; level < 16; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.CurrentLine <= 0 || strings.HasPrefix(dbg.Source, builtinChunk) {
			continue
		}
		return fmt.Sprintf(" (%s:%d)", dbg.Source, dbg.CurrentLine)
	}
	return ""
}
