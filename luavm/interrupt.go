package luavm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// gopher-lua checks its context once per VM instruction and nowhere else,
// so that check is how a runaway handler is stopped. Every thread of a VM
// shares one interrupt as its context. Unlike a context.Context per
// message, it costs nothing to set up per run, and unlike a cancelled
// context it can be re-armed: after a fire, the next run gets a fresh Done
// channel, so a coroutine suspended during someone else's timeout is not
// poisoned by it.

// interruptReason says why a run was stopped.
type interruptReason int32

const (
	notInterrupted  interruptReason = iota
	interruptBudget                 // the handler's budget ran out: client_rpc.timeout
	interruptHeap                   // the Go heap passed lua.heap_limit_bytes: client_rpc.resource_exhausted
)

// errInterrupted is what gopher-lua raises inside the interrupted thread.
var errInterrupted = errors.New("shield: handler interrupted")

type interrupt struct {
	done atomic.Pointer[chan struct{}]
	// stopped is set once done is closed, until disarm: what gopher-lua
	// polls before each instruction (lua.Interrupter, patch 5).
	stopped atomic.Bool

	mu       sync.Mutex // guards everything below, and closing done
	armed    bool
	deadline time.Time // of the run in progress
	reason   interruptReason
	timerAt  time.Time // when timer fires; zero when it is not pending

	// timer fires the budget of the run in progress. Resetting a timer
	// for every run of every message would cost more than the run, so it
	// is set only when a run's deadline comes before the time it is
	// already set for; a fire before the current deadline sets it again.
	timer *time.Timer
}

func newInterrupt() *interrupt {
	in := &interrupt{}
	ch := make(chan struct{})
	in.done.Store(&ch)
	in.timer = time.AfterFunc(time.Hour, in.expire)
	in.timer.Stop()
	return in
}

// arm starts watching a run that may last until deadline.
func (in *interrupt) arm(deadline time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.armed, in.deadline = true, deadline
	if in.timerAt.IsZero() || deadline.Before(in.timerAt) {
		in.timerAt = deadline
		in.timer.Reset(time.Until(deadline))
	}
}

// expire is the timer's function: it interrupts the run in progress if its
// budget is spent, and otherwise sets the timer for that run's deadline.
func (in *interrupt) expire() {
	in.mu.Lock()
	in.timerAt = time.Time{}
	if in.armed && in.reason == notInterrupted && time.Now().Before(in.deadline) {
		in.timerAt = in.deadline
		in.timer.Reset(time.Until(in.deadline))
		in.mu.Unlock()
		return
	}
	in.mu.Unlock()
	in.fire(interruptBudget)
}

// disarm ends the run and reports whether and why it was interrupted. A
// fired channel is replaced so that the next run starts clean. The timer
// is left set: when it fires with no run in progress, it does nothing.
func (in *interrupt) disarm() interruptReason {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.armed = false
	r := in.reason
	if r != notInterrupted {
		ch := make(chan struct{})
		in.done.Store(&ch)
		in.stopped.Store(false) // no Lua runs now: the VM's own goroutine disarms
		in.reason = notInterrupted
	}
	return r
}

// fire stops the run in progress, if there is one. It is safe to call from
// any goroutine; the first reason wins. A budget fire before the run's
// deadline is ignored: it is a timer set for an earlier run.
func (in *interrupt) fire(r interruptReason) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.armed || in.reason != notInterrupted {
		return false
	}
	if r == interruptBudget && time.Now().Before(in.deadline) {
		return false
	}
	in.reason = r
	close(*in.done.Load())
	in.stopped.Store(true) // after the close: a VM that sees it finds Err set
	return true
}

func (in *interrupt) stop() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.timer.Stop()
	in.timerAt = time.Time{}
}

// The context.Context methods. Deadline reports none: the budget is
// enforced by fire, not by gopher-lua.
func (in *interrupt) Deadline() (time.Time, bool) { return time.Time{}, false }
func (in *interrupt) Done() <-chan struct{}       { return *in.done.Load() }
func (in *interrupt) Value(any) any               { return nil }
func (in *interrupt) Err() error {
	select {
	case <-in.Done():
		return errInterrupted
	default:
		return nil
	}
}

// Interrupted is the flag gopher-lua polls (lua.Interrupter).
func (in *interrupt) Interrupted() *atomic.Bool { return &in.stopped }

var (
	_ context.Context = (*interrupt)(nil)
	_ lua.Interrupter = (*interrupt)(nil)
)
