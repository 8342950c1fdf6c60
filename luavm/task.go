package luavm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/tracing"
)

// A task is one message being handled: it runs in its own coroutine, from
// the start of its handler until the handler returns, raises, or runs out
// of budget. While it waits (shield.call, sleep) the VM serves others.
type task struct {
	id       uint64
	co       *lua.LState
	deadline time.Time
	ctxline  lua.LValue  // deadline as ctx.deadline shows it
	what     string      // for logs, when in and call are nil: the hook, or what else
	waiting  uint64      // the pending op it is suspended on; 0 when running or stuck
	budget   *timerEntry // its deadline in the timer heap, once it suspended
	done     bool
	// chain is, while the task is suspended, every coroutine it waits
	// in: its own and those of pcalls and script coroutines that passed
	// the suspension up (vm.suspendedCo). Rebuilt at each suspension.
	chain []*lua.LState

	in      *ingress.ClientIngress // a client request or notify
	handler *handler               // in's, once found
	call    *Call                  // a shield.call (ID != 0) or shield.send
	ref     *egress.ClientRef      // a session hook's session
	onDone  func(vals []lua.LValue, err *codes.Error)
	// noSuspend marks room_tick (docs/rooms.md §4.1): the suspending
	// functions raise instead of yielding, and its errors are told to
	// clients in their client form (§10.2: the tick's requests, END).
	noSuspend bool
	// cause is why a room_tick was stopped (budget, heap), for
	// shield_room_tick_errors_total; empty when it raised.
	cause string
	// span is the task's handler or method span (tracing.go); the zero
	// Span when the VM or the message is not traced.
	span tracing.Span
}

// awaits reports whether the task is still suspended on the pending op
// id. The suspending functions refuse to start where their yield would
// fail (VM.running), so a task never moves on without its op's result;
// should one, the late result is dropped, not handed to its next wait.
func (t *task) awaits(id uint64) bool { return t != nil && !t.done && t.waiting == id }

// label names the task in logs and messages. It is built only when one is
// written: formatting it for every message would cost more than the run.
func (t *task) label() string {
	switch {
	case t.in != nil:
		return routeLabel(&t.in.Client)
	case t.call != nil:
		return "method " + t.call.Method
	}
	return t.what
}

// pending is something a suspended task, or a timer, waits for.
type pending struct {
	kind  pendingKind
	task  *task            // pendCall, pendBind (nil once its task ended), pendSleep
	fn    *lua.LFunction   // pendTimeout
	timer *timerEntry      // pendSleep, pendTimeout
	ref   egress.ClientRef // pendBind: the ref bound from
	// cancel ends a pendOp's context: its task no longer waits for it.
	cancel context.CancelFunc
	// span is a traced pendCall's or pendOp's span, ended with its result.
	span tracing.Span
}

type pendingKind uint8

const (
	pendCall pendingKind = iota + 1
	pendBind
	pendSleep
	pendTimeout
	pendOp // shield.http.request, shield.kv.*: see ops.go
)

// poolMax bounds the idle message coroutines a VM keeps.
const poolMax = 256

// freeTasksMax bounds the finished tasks a VM keeps for reuse.
const freeTasksMax = 64

// newTask returns a zero task, reused when one is free (see recycle).
func (vm *VM) newTask() *task {
	if n := len(vm.freeTasks); n > 0 {
		t := vm.freeTasks[n-1]
		vm.freeTasks[n-1] = nil
		vm.freeTasks = vm.freeTasks[:n-1]
		return t
	}
	return new(task)
}

// recycle takes back a task that finished without ever suspending, once
// the call that started it returns: a handler that answers at once costs
// no task allocation. Such a task was never in vm.tasks or the timer heap
// (run puts it there only when it yields, and sets its budget then); a
// pending entry or suspended coroutines it had (an interrupt came as it
// yielded) finish removed; vm.current is cleared after every resume; and the client a
// script may keep is an allocation of its own: nothing points at it any
// more. A task that suspended is left to the collector instead, so that a
// stale pointer to it (a late reply, a timer) can never reach the next
// message's task.
func (vm *VM) recycle(t *task) {
	if !t.done || t.budget != nil || len(vm.freeTasks) >= freeTasksMax {
		return
	}
	*t = task{}
	vm.freeTasks = append(vm.freeTasks, t)
}

func (vm *VM) getThread() *lua.LState {
	if n := len(vm.pool); n > 0 {
		th := vm.pool[n-1]
		vm.pool = vm.pool[:n-1]
		return th
	}
	th := vm.newThread()
	// ResumePooled keeps this hook (Resume would replace it on every start).
	th.Panic = vm.panicHook
	return th
}

// suspend records th as a coroutine t waits in: coroutine.resume refuses
// it until t runs again.
func (vm *VM) suspend(t *task, th *lua.LState) {
	vm.suspendedCo[th] = t
	t.chain = append(t.chain, th)
}

// release forgets the coroutines t waited in.
func (vm *VM) release(t *task) {
	for i, th := range t.chain {
		delete(vm.suspendedCo, th)
		t.chain[i] = nil
	}
	t.chain = t.chain[:0]
}

// kill makes a suspended coroutine of a finished task dead to Lua.
func (vm *VM) kill(th *lua.LState) {
	if vm.l.Status(th) == "suspended" {
		th.Dead = true
	}
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
		// GetStack gives the levels after a frame to the tail calls it
		// replaced (gopher-lua patch 10), which Lua 5.1 prints so.
		tails := dbg.TailCalls
		i += tails
		if strings.HasPrefix(dbg.Source, builtinChunk) {
			continue // the runtime's own Lua: noise in a service's traceback
		}
		where := dbg.Source
		switch {
		case dbg.What == "G":
			where = "[C]" // Lua's name for a host function's frame
		case dbg.CurrentLine > 0:
			where += ":" + strconv.Itoa(dbg.CurrentLine)
		}
		fmt.Fprintf(&b, "\n\t%s: %s", where, frameName(dbg))
		for range tails {
			b.WriteString("\n\t(tail call): ?")
		}
	}
	return b.String()
}

// frameName says which function a traceback frame is in, in Lua 5.1's
// words, which a Lua author knows: a function called by name is named
// ("in function 'inner'"), one called without (a task's first frame: the
// handler, which Go calls) is where it is defined ("in function
// <a.lua:12>"), and a Go function without a name is "?". gopher-lua names
// a coroutine's first frame "corountine" and a Go one it cannot name
// "(anonymous)"; neither means anything to a service's author.
func frameName(dbg *lua.Debug) string {
	switch name := dbg.Name; {
	case name == "" || name == "corountine" || name == "main chunk" || name == "(anonymous)":
		if dbg.What == "G" {
			return "?"
		}
		return fmt.Sprintf("in function <%s:%d>", dbg.Source, dbg.LineDefined)
	case strings.HasPrefix(name, "<"): // gopher-lua's own <source:line>
		return "in function " + name
	default:
		return "in function '" + name + "'"
	}
}

// start runs fn(args...) as a new task. Its deadline was just set from
// now, or is a caller's that HandleCall checked.
func (vm *VM) start(t *task, fn *lua.LFunction, args ...lua.LValue) {
	vm.nextID++
	t.id = vm.nextID
	if ms := t.deadline.UnixMilli(); ms != vm.lastLine {
		// Tasks started in the same millisecond share the boxed value.
		vm.lastLine, vm.lastLineValue = ms, lua.LNumber(ms)
	}
	t.ctxline = vm.lastLineValue
	t.co = vm.getThread()
	if fn.IsG {
		// A Go function (a module field set to one, a timer's callback)
		// cannot be a coroutine's first frame: gopher-lua never ends such
		// a coroutine. A Lua trampoline tail-calls it (gopher-lua patch 8
		// lets it yield there).
		vm.args = append(vm.args[:0], fn)
		vm.args = append(vm.args, args...)
		vm.run(t, vm.callGo, vm.args...)
		return
	}
	vm.run(t, fn, args...)
}

// resume runs a suspended task again, unless its budget ran out meanwhile.
func (vm *VM) resume(t *task, args ...lua.LValue) {
	if !time.Now().Before(t.deadline) {
		vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.label()))
		return
	}
	if st := vm.l.Status(t.co); st != "suspended" {
		// Only the VM resumes a suspended message's coroutine (coroutine.go
		// refuses a script's resume of it); should anything else have
		// run it on, there is nothing left to give the reply to.
		vm.finish(t, nil, codes.New(codes.HandlerFailed, "%s: its coroutine was resumed elsewhere and is %s", t.label(), st))
		return
	}
	vm.run(t, nil, args...)
}

// run runs t until it finishes, fails, or suspends again: it starts fn on
// t's coroutine, or resumes the coroutine when fn is nil.
func (vm *VM) run(t *task, fn *lua.LFunction, args ...lua.LValue) {
	if vm.crashed {
		// Replaced when the actor's step ends: run nothing more in it.
		vm.finish(t, nil, vm.crashErr())
		return
	}
	// While it runs, the coroutines it waited in are its own to resume
	// again; those it waits in next are recorded as it suspends.
	vm.release(t)
	vm.current, vm.raised, vm.trace, vm.nesting = t, false, "", 0
	t.waiting = 0
	vm.setCtx(t.ctxline)
	vm.intr.arm(t.deadline)
	st, err, vals, panicked := vm.resumeTask(t, fn, args)
	reason := vm.intr.disarm()
	vm.current = nil

	switch {
	case panicked != nil:
		// A Go panic that gopher-lua did not turn into a Lua error (it
		// re-panics when the thread it unwinds to has no parent): the VM
		// is corrupt, and the actor replaces it when its step ends, but the
		// task in it still gets its one answer.
		vm.markCrashed("go panic inside a handler", t.label(), fmt.Sprint(panicked), string(debug.Stack()))
		vm.finish(t, nil, vm.crashErr())
	case reason == interruptBudget && t.noSuspend:
		t.cause = "budget"
		// room_tick past room.tick_budget is a tick error (docs/rooms.md
		// §10.2): an incident, as a raise is.
		vm.finish(t, nil, vm.classify(t, fmt.Errorf("room_tick ran past room.tick_budget")))
	case reason == interruptHeap && t.noSuspend:
		t.cause = "heap"
		vm.finish(t, nil, vm.classify(t, fmt.Errorf("room_tick was stopped by lua.heap_limit_bytes")))
	case reason == interruptBudget:
		vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.label()))
	case reason == interruptHeap:
		// The run stops; the VM and its state stay (SPEC §6: only a Go
		// panic replaces a VM). What the run grew and left reachable is
		// the script's, and the next run may free it.
		vm.finish(t, nil, codes.New(codes.ResourceExhausted, "the heap passed lua.heap_limit_bytes"))
	case vm.crashed:
		// A Go panic in a gateway call (see guard), already logged; a
		// pcall may have caught it as an error, but the VM is replaced
		// and the request fails all the same.
		vm.finish(t, nil, vm.crashErr())
	case err != nil && isCallStackOverflow(err):
		// gopher-lua's growable call stack panics instead of raising when
		// it is full (its IsFull never reports true), so deep recursion
		// arrives as a recovered Go panic. It is the script's error, and
		// the VM is intact: the dead thread held the only broken state.
		vm.finish(t, nil, vm.classify(t, &lua.ApiError{Type: lua.ApiErrorRun, Object: lua.LString("stack overflow")}))
	case err != nil && !vm.raised:
		// A panic in Go code under the handler, recovered by gopher-lua
		// without passing through the hook: the VM may be corrupt.
		vm.markCrashed("go panic inside a handler", t.label(), err.Error(), "")
		vm.finish(t, nil, vm.crashErr())
	case err != nil:
		vm.finish(t, nil, vm.classify(t, err))
	case st == lua.ResumeYield:
		// Waiting for a reply or timer (t.waiting set by the function that
		// yielded), or stuck in a bare coroutine.yield; either way the
		// budget still runs. Only suspended tasks are in vm.tasks: a task
		// that never suspends costs no map entry.
		if t.budget == nil {
			vm.tasks[t.id] = t
			t.budget = vm.timers.push(t.deadline, timerBudget, t.id)
		}
		vm.suspend(t, t.co)
	default:
		// The function returned: the coroutine is dead to Lua, and starts
		// the next message's function (ResumePooled).
		vm.putThread(t.co)
		vm.finish(t, vals, nil)
	}
	// The values were read (finish is done with them): their slice serves
	// the next run, holding nothing of this one, unless a run returned so
	// many (unpack of a big table) that keeping it would pin the memory.
	if cap(vals) <= maxKeptRets {
		clear(vals)
		vm.rets = vals[:0]
	}
}

// maxKeptRets bounds the scratch slice of results a VM keeps between runs.
const maxKeptRets = 64

// resumeTask resumes t's coroutine, recovering a Go panic that escapes
// gopher-lua instead of letting it unwind the actor's step, where the task
// would be lost without an answer.
func (vm *VM) resumeTask(t *task, fn *lua.LFunction, args []lua.LValue) (st lua.ResumeState, err error, vals []lua.LValue, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	// The values go into the VM's scratch slice (a new one while it has
	// none), taken from it meanwhile so that a run started while finish
	// still reads them gets its own.
	rets := vm.rets
	vm.rets = nil
	st, err, vals = vm.l.ResumePooled(rets, t.co, fn, args...)
	return st, err, vals, nil
}

// callStackOverflow is the panic value of gopher-lua's full call stack.
const callStackOverflow = lua.LString("lua callstack overflow")

func isCallStackOverflow(err error) bool {
	api, ok := err.(*lua.ApiError)
	return ok && api.Object == callStackOverflow
}

// finish delivers a task's outcome once.
func (vm *VM) finish(t *task, vals []lua.LValue, err *codes.Error) {
	if t.done {
		return
	}
	t.done = true
	delete(vm.tasks, t.id)
	// A message that ends while suspended (its budget ran out, its VM
	// stops, an interrupt came as it yielded) leaves its coroutines where
	// they yielded, never pooled: dead to Lua, so that a script that kept
	// coroutine.running() cannot run the rest of the handler inside
	// another message.
	if t.co != nil {
		for _, th := range t.chain {
			vm.kill(th)
		}
		vm.kill(t.co)
		vm.release(t)
	}
	vm.timers.remove(t.budget)
	if p, ok := vm.pending[t.waiting]; ok && t.waiting != 0 {
		switch {
		case p.kind == pendBind:
			// The bind may still succeed at the gateway, and then the
			// old epoch's frames queued here are stale all the same
			// (SPEC §4): its outcome is still awaited, by nobody.
			// BindDone comes exactly once, so the entry does not stay.
			p.task = nil
		default:
			delete(vm.pending, t.waiting) // a late result will find nothing
			p.span.End(outcome(err), time.Now())
			vm.timers.remove(p.timer)
			if p.cancel != nil {
				p.cancel() // an op nobody waits for stops its request
			}
		}
	}
	if t.span.Active() {
		t.span.End(outcome(err), time.Now())
	}
	switch {
	case t.in != nil:
		vm.respond(t, vals, err)
		// Answered: the frame is given back for reuse (nothing made from
		// it shares more than immutable strings), and a client the script
		// keeps keeps the task, not the frame.
		t.in.Release()
		t.in = nil
	case t.call != nil:
		vm.returnCall(t, vals, err)
	case t.onDone != nil:
		t.onDone(vals, err)
	case err != nil:
		vm.log.Warn("task failed", "task", t.label(), "code", string(err.Code), "message", err.Message)
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
	incident := newIncident()
	msg := err.Error()
	if api != nil && api.Object != nil {
		msg = api.Object.String()
	}
	if vm.incidents.allow(time.Now()) {
		attrs := append(vm.sessionAttrs(t), "incident", incident, "task", t.label(), "error", msg, "traceback", vm.trace)
		vm.log.Error("handler failed", attrs...)
	} else if vm.spec.Suppressed != nil {
		vm.spec.Suppressed()
	}
	if t != nil && t.in == nil && t.call == nil && t.session() == nil && !t.noSuspend {
		// A hook the runtime ran (init, reload_load, ...): its error is
		// the operator's, who reads it where it surfaces (a failed start
		// or reload), not a client's.
		return codes.New(codes.HandlerFailed, "%s (incident %s)", msg, incident)
	}
	return codes.New(codes.HandlerFailed, "internal error (incident %s)", incident)
}

// sessionAttrs are the session_id and player_id of a log line about a
// client task (SPEC §9: once each), or none.
func (vm *VM) sessionAttrs(t *task) []any {
	if ref := t.session(); ref != nil {
		return []any{"session_id", ref.SessionID, "player_id", playerAttr(ref.PlayerID)}
	}
	return nil
}

// session is the session a task is about: a client frame's, a session
// hook's, or nil.
func (t *task) session() *egress.ClientRef {
	switch {
	case t == nil:
		return nil
	case t.in != nil:
		return &t.in.Client.Ref
	}
	return t.ref
}

// crashErr is what a task of a crashed VM answers: handler_failed with
// the crash's incident (SPEC §6), which its log line carries.
func (vm *VM) crashErr() *codes.Error {
	if vm.crashError == nil {
		vm.markCrashed("VM crashed", "", "", "")
	}
	return vm.crashError
}

// markCrashed marks the VM for replacement, logs why with a new incident
// id, and makes that incident the one every task of the VM answers with.
// The first crash's incident is kept: later tasks fail because of it.
func (vm *VM) markCrashed(what, task, panicked, stack string) {
	vm.crashed = true
	if vm.crashError != nil {
		return
	}
	incident := newIncident()
	vm.crashError = codes.New(codes.HandlerFailed, "internal error (incident %s)", incident)
	attrs := []any{"incident", incident}
	if task != "" {
		attrs = append(attrs, "task", task)
	}
	if panicked != "" {
		attrs = append(attrs, "panic", panicked)
	}
	if stack != "" {
		attrs = append(attrs, "stack", stack)
	}
	vm.log.Error(what+"; the VM will be replaced", attrs...)
}

// Crash marks the VM crashed by a Go panic that went past it into the
// actor, and logs it with its stack and an incident id.
func (vm *VM) Crash(what string, panicked any, stack []byte) {
	vm.markCrashed(what, "", fmt.Sprint(panicked), string(stack))
}

// CrashError returns what the live tasks of a crashed VM answer (see
// Abort): handler_failed with the crash's incident id.
func (vm *VM) CrashError() *codes.Error { return vm.crashErr() }

// newIncident returns a fresh incident id: 16 lowercase hex digits.
func newIncident() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// guard marks the VM crashed when a Go panic passes through a call out of
// it (the gateway's methods), logs it with its stack, and lets it go on.
// gopher-lua turns the panic into a Lua error, which a pcall could swallow,
// leaving a VM whose Go side may be inconsistent in service; marked, the
// VM is replaced when the run ends. Use it as `defer vm.guard(what)`.
func (vm *VM) guard(what string) {
	r := recover()
	if r == nil {
		return
	}
	vm.markCrashed("go panic in "+what, "", fmt.Sprint(r), string(debug.Stack()))
	panic(r)
}

// catch turns a Go panic in a codec, called outside of any Lua run, into
// handler_failed for the request (*err) and a crash of the VM, replaced
// when the actor's step ends: the request still gets its one answer. Use it
// as `defer vm.catch(what, &err)`.
func (vm *VM) catch(what string, err **codes.Error) {
	r := recover()
	if r == nil {
		return
	}
	vm.markCrashed("go panic "+what, "", fmt.Sprint(r), string(debug.Stack()))
	*err = vm.crashError
}

// Abort fails every live task with err: the VM is being replaced or
// stopped, and each waiting client or caller still gets its one answer.
func (vm *VM) Abort(err *codes.Error) {
	for _, t := range vm.tasks {
		vm.finish(t, nil, err)
	}
}

// Crashed reports whether the VM must be replaced: a Go panic hit it.
func (vm *VM) Crashed() bool { return vm.crashed }

// Busy is the number of suspended tasks, and of pending timers and calls.
func (vm *VM) Busy() (tasks, pending int) { return len(vm.tasks), len(vm.pending) }

// InterruptHeap stops the handler running now, if any, with
// client_rpc.resource_exhausted. The heap watcher calls it from its own
// goroutine when the Go heap passes lua.heap_limit_bytes.
func (vm *VM) InterruptHeap() bool { return vm.intr.fire(interruptHeap) }
