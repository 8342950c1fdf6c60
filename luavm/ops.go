package luavm

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/tracing"
)

// An op is the outside work of a suspending shield function that neither
// another VM nor the gateway does: an HTTP request, a kv operation. It runs
// on a goroutine of its own while only the calling task waits, like
// shield.call, and its outcome comes back as a Result on the VM's own
// control lane, so that the VM's state is only ever touched by its actor.
//
// The VM owns every op goroutine: each is a pending operation (so at most
// max_pending run at once), each runs under a context that ends at the
// op's deadline, when its task ends (finished, timed out, aborted) and when
// the VM closes, and Close waits for all of them to return.

// opOutcome turns an op's result into what the suspended task resumes
// with: true and the values, or false and the error (see checkChunk). It
// is built on the op's goroutine from plain Go data and run on the actor's
// goroutine, the only one that may touch the Lua state.
type opOutcome func(vm *VM) []lua.LValue

// opRun is an op's work. It runs on the op's goroutine and must not touch
// the VM; ctx ends at the op's deadline or when nobody waits any more.
type opRun func(ctx context.Context) opOutcome

// startOp suspends t until run, started on a goroutine of its own, is
// done or deadline passes (then ctx ends, and run should return soon). It
// returns what the Go half of a suspending function returns.
func (vm *VM) startOp(L *lua.LState, t *task, name string, attr tracing.Attr, deadline time.Time, run opRun) int {
	ctx, cancel := context.WithDeadline(vm.opCtx, deadline)
	p := &pending{kind: pendOp, task: t, cancel: cancel}
	p.span = vm.traceOut(t, name, tracing.Client, attr)
	id, ok := vm.addPending(p)
	if !ok {
		p.span.End(string(codes.Busy), time.Now())
		cancel()
		return vm.fail(L, codes.Busy, "max_pending (%d) timers, calls and requests already in flight", vm.spec.MaxPending)
	}
	host, self, gen, log := vm.host, vm.host.Self(), vm.gen, vm.log
	vm.ops.Add(1)
	go func() {
		defer vm.ops.Done()
		var out opOutcome
		defer func() {
			// A panic in a store's or the HTTP client's code would end the
			// process from this goroutine: the op fails instead, and the
			// VM, which the panic never touched, goes on.
			if r := recover(); r != nil {
				log.Error("go panic in "+name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				out = failed(codes.Unavailable, "%s: internal error", name)
			}
			cancel()
			host.Return(&Result{To: self, ID: id, Gen: gen, op: out, opDone: time.Now()})
		}()
		out = run(ctx)
	}()
	t.waiting = id
	return L.Yield(vm.wait)
}

// failed is an op outcome that raises a shield error with code.
func failed(code codes.Code, format string, args ...any) opOutcome {
	msg := fmt.Sprintf(format, args...)
	return func(vm *VM) []lua.LValue { return []lua.LValue{lua.LFalse, vm.errorValue(code, msg)} }
}

// misused is an op outcome that raises a plain Lua error (SPEC §8: misuse
// is a string, not a code).
func misused(format string, args ...any) opOutcome {
	msg := fmt.Sprintf(format, args...)
	return func(*VM) []lua.LValue { return []lua.LValue{lua.LFalse, lua.LString(msg)} }
}

// returned is an op outcome that returns vals.
func returned(vals ...lua.LValue) opOutcome {
	return func(*VM) []lua.LValue { return append([]lua.LValue{lua.LTrue}, vals...) }
}

// opsCloseWait bounds how long Close waits for cancelled ops: the store
// and the HTTP client end a request soon after its context, but a VM's
// stop must not hang on one that does not.
const opsCloseWait = 5 * time.Second

// closeOps cancels every op still running and waits for their goroutines,
// at most opsCloseWait. Their results, if any, go to a control lane nobody
// reads any more, or to the VM that replaced this one, which drops them
// (Result.Gen); none of them touches the closed Lua state.
func (vm *VM) closeOps() {
	if vm.opStop == nil {
		return
	}
	vm.opStop()
	done := make(chan struct{})
	go func() {
		vm.ops.Wait()
		close(done)
	}()
	t := time.NewTimer(opsCloseWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		vm.log.Error("ops still running after their VM closed; not waiting for them", "waited", opsCloseWait)
	}
}

// misuse raises a plain Lua error (SPEC §8: a bad argument, key, bucket or
// value) from the Go half of a suspending function: the message, then the
// script's file and line. L.RaiseError and L.ArgError would name the
// runtime's wrapper instead, which the script author never wrote.
func misuse(L *lua.LState, format string, args ...any) {
	L.Error(lua.LString(fmt.Sprintf(format, args...)+scriptLine(L)), 0)
}
