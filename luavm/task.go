package luavm

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/ingress"
)

// A task is one message being handled: it runs in its own coroutine, from
// the start of its handler until the handler returns, raises, or runs out
// of budget. While it waits (shield.call, sleep) the VM serves others.
type task struct {
	id       uint64
	co       *lua.LState
	deadline time.Time
	start    time.Time
	what     string // for logs: the route, method or hook
	waiting  uint64 // the pending op it is suspended on; 0 when running or stuck
	queued   bool   // its budget is in the timer heap
	done     bool

	in     *ingress.ClientIngress // a client request or notify
	call   *Call                  // a shield.call (ID != 0) or shield.send
	onDone func(vals []lua.LValue, err *codes.Error)
}

// pending is something a suspended task, or a timer, waits for.
type pending struct {
	kind pendingKind
	task *task          // pendCall, pendSleep
	fn   *lua.LFunction // pendTimeout
}

type pendingKind uint8

const (
	pendCall pendingKind = iota + 1
	pendSleep
	pendTimeout
)

// poolMax bounds the idle message coroutines a VM keeps.
const poolMax = 256

func (vm *VM) getThread() *lua.LState {
	if n := len(vm.pool); n > 0 {
		th := vm.pool[n-1]
		vm.pool = vm.pool[:n-1]
		return th
	}
	th := vm.newThread()
	// The first resume starts the loop: run a no-op through it so that
	// Panic, which Resume sets on a thread's first start, can be replaced
	// by the hook that keeps tracebacks.
	vm.L.Resume(th, vm.body, vm.noop)
	th.Panic = vm.panicHook
	return th
}

func (vm *VM) putThread(th *lua.LState) {
	if len(vm.pool) < poolMax {
		vm.pool = append(vm.pool, th)
	}
}

// panicHook records where a Lua error was raised, while the stack is still
// there, then unwinds as gopher-lua's own hook does.
func (vm *VM) panicHook(L *lua.LState) {
	vm.raised = true
	vm.trace = traceback(L)
	panic(&lua.ApiError{Type: lua.ApiErrorRun, Object: L.Get(-1)})
}

func traceback(L *lua.LState) string {
	var b strings.Builder
	b.WriteString("stack traceback:")
	for i := 0; i < 24; i++ {
		dbg, ok := L.GetStack(i)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sln", dbg, lua.LNil); err != nil {
			break
		}
		if strings.HasPrefix(dbg.Source, builtinChunk) {
			continue // the runtime's own Lua: noise in a service's traceback
		}
		name := dbg.Name
		if name == "" || name == "corountine" {
			name = "?"
		}
		fmt.Fprintf(&b, "\n\t%s:%d: in %s", dbg.Source, dbg.CurrentLine, name)
	}
	return b.String()
}

// start runs fn(args...) as a new task.
func (vm *VM) start(t *task, fn *lua.LFunction, args ...lua.LValue) {
	vm.nextID++
	t.id = vm.nextID
	t.start = time.Now()
	t.co = vm.getThread()
	vm.tasks[t.id] = t
	vm.args = append(vm.args[:0], fn)
	vm.args = append(vm.args, args...)
	vm.resume(t, vm.args...)
}

// resume runs t until it finishes, fails, or suspends again.
func (vm *VM) resume(t *task, args ...lua.LValue) {
	if !time.Now().Before(t.deadline) {
		vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.what))
		return
	}
	vm.current, vm.raised, vm.trace = t, false, ""
	t.waiting = 0
	vm.intr.arm(t.deadline)
	st, err, vals := vm.L.Resume(t.co, vm.body, args...)
	reason := vm.intr.disarm()
	vm.current = nil

	switch {
	case reason == interruptBudget:
		vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.what))
	case reason == interruptHeap:
		// Whatever the handler grew may still be reachable from the VM's
		// globals: start over with a fresh VM.
		vm.crashed = true
		vm.finish(t, nil, codes.New(codes.ResourceExhausted, "the heap passed lua.heap_limit_bytes"))
	case err != nil:
		if !vm.raised {
			// A panic in Go code under the handler, recovered by gopher-lua
			// without passing through the hook: the VM may be corrupt.
			vm.crashed = true
			vm.Log.Error("go panic inside a handler; the VM will be replaced", "task", t.what, "panic", err.Error())
			vm.finish(t, nil, codes.New(codes.HandlerFailed, "internal error"))
			return
		}
		vm.finish(t, nil, vm.classify(t, err))
	case st == lua.ResumeYield && len(vals) > 0 && vals[0] == vm.done:
		vm.putThread(t.co)
		vm.finish(t, vals[1:], nil)
	case st == lua.ResumeYield:
		// Waiting for a reply or timer (t.waiting set by the function that
		// yielded), or stuck in a bare coroutine.yield; either way the
		// budget still runs.
		if !t.queued {
			t.queued = true
			vm.timers.push(t.deadline, timerBudget, t.id)
		}
	default:
		// The loop never returns; if it did, the thread is spent.
		vm.finish(t, vals, nil)
	}
}

// finish delivers a task's outcome once.
func (vm *VM) finish(t *task, vals []lua.LValue, err *codes.Error) {
	if t.done {
		return
	}
	t.done = true
	delete(vm.tasks, t.id)
	if t.waiting != 0 {
		delete(vm.pending, t.waiting) // a late result will find nothing
	}
	switch {
	case t.in != nil:
		vm.respond(t, vals, err)
	case t.call != nil:
		vm.returnCall(t, vals, err)
	case t.onDone != nil:
		t.onDone(vals, err)
	case err != nil:
		vm.Log.Warn("task failed", "task", t.what, "code", string(err.Code), "message", err.Message)
	}
}

// classify maps a Lua error to the code the client or caller sees (SPEC
// §6): a shield error keeps its code; anything else is handler_failed with
// an incident id whose log line carries the traceback.
func (vm *VM) classify(t *task, err error) *codes.Error {
	api, _ := err.(*lua.ApiError)
	if api != nil {
		if tbl, ok := api.Object.(*lua.LTable); ok && tbl.Metatable == vm.errMeta {
			code := lua.LVAsString(tbl.RawGetString("code"))
			msg := lua.LVAsString(tbl.RawGetString("message"))
			return &codes.Error{Code: codes.Code(code), Message: msg}
		}
	}
	incident := fmt.Sprintf("%016x", rand.Uint64())
	msg := err.Error()
	if api != nil && api.Object != nil {
		msg = api.Object.String()
	}
	vm.Log.Error("handler failed", "incident", incident, "task", t.what, "error", msg, "traceback", vm.trace)
	return codes.New(codes.HandlerFailed, "internal error (incident %s)", incident)
}

// Abort fails every live task with err: the VM is being replaced or
// stopped, and each waiting client or caller still gets its one answer.
func (vm *VM) Abort(err *codes.Error) {
	for _, t := range vm.tasks {
		vm.finish(t, nil, err)
	}
}

// Crashed reports whether the VM must be replaced: a Go panic hit it, or a
// handler was stopped at the heap limit.
func (vm *VM) Crashed() bool { return vm.crashed }

// Busy is the number of live tasks and pending timers and calls.
func (vm *VM) Busy() (tasks, pending int) { return len(vm.tasks), len(vm.pending) }

// InterruptHeap stops the handler running now, if any, with
// client_rpc.resource_exhausted. The heap watcher calls it from its own
// goroutine when the Go heap passes lua.heap_limit_bytes.
func (vm *VM) InterruptHeap() bool { return vm.intr.fire(interruptHeap) }
