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

	// run is the run in progress: its deadline in nanoseconds since base
	// (at least 1), with runFired set once fire stopped it; 0 between
	// runs. It is one word so that arm and disarm, twice per message,
	// take no lock: fire sets runFired by compare-and-swap, and disarm's
	// swap then sees it. Two runs with the same deadline cannot be told
	// apart, which does not matter: a fire meant for one is due for the
	// other.
	run  atomic.Int64
	base time.Time

	mu     sync.Mutex      // serializes fire with a fired run's disarm; guards reason and resetting timer
	reason interruptReason // why the fired run was stopped
	// timerAt is when timer fires (nanoseconds since base), 0 when it is
	// not pending; written under mu, read by arm without it.
	timerAt atomic.Int64

	// timer fires the budget of the run in progress. Resetting a timer
	// for every run of every message would cost more than the run, so it
	// is set only when a run's deadline comes before the time it is
	// already set for; a fire before the current deadline sets it again.
	timer *time.Timer
}

const runFired = 1 << 62

func newInterrupt() *interrupt {
	in := &interrupt{base: time.Now()}
	ch := make(chan struct{})
	in.done.Store(&ch)
	in.timer = time.AfterFunc(time.Hour, in.expire)
	in.timer.Stop()
	return in
}

// arm starts watching a run that may last until deadline.
func (in *interrupt) arm(deadline time.Time) {
	d := max(int64(deadline.Sub(in.base)), 1)
	in.run.Store(d)
	// After the store: an expire that finds no run left timerAt zero for
	// this load to see (both are sequentially consistent).
	if at := in.timerAt.Load(); at == 0 || d < at {
		in.mu.Lock()
		if at := in.timerAt.Load(); at == 0 || d < at {
			in.timerAt.Store(d)
			in.timer.Reset(time.Duration(d) - time.Since(in.base))
		}
		in.mu.Unlock()
	}
}

// expire is the timer's function: it interrupts the run in progress if its
// budget is spent, and otherwise sets the timer for that run's deadline.
func (in *interrupt) expire() {
	in.mu.Lock()
	in.timerAt.Store(0)
	if d := in.run.Load(); d != 0 && d&runFired == 0 && int64(time.Since(in.base)) < d {
		in.timerAt.Store(d)
		in.timer.Reset(time.Duration(d) - time.Since(in.base))
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
	if in.run.Swap(0)&runFired == 0 {
		return notInterrupted
	}
	// Fired: wait for fire to finish (it holds mu), then start clean. No
	// Lua runs now: the VM's own goroutine disarms.
	in.mu.Lock()
	defer in.mu.Unlock()
	ch := make(chan struct{})
	in.done.Store(&ch)
	in.stopped.Store(false)
	r := in.reason
	in.reason = notInterrupted
	return r
}

// fire stops the run in progress, if there is one. It is safe to call from
// any goroutine; the first reason wins. A budget fire before the run's
// deadline is ignored: it is a timer set for an earlier run.
func (in *interrupt) fire(r interruptReason) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	d := in.run.Load()
	if d == 0 || d&runFired != 0 {
		return false
	}
	if r == interruptBudget && int64(time.Since(in.base)) < d {
		return false
	}
	if !in.run.CompareAndSwap(d, d|runFired) {
		return false // the run ended meanwhile
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
	in.timerAt.Store(0)
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
