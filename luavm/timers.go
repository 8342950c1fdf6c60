package luavm

import (
	"container/heap"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
)

// timerKind says what a timer heap entry wakes.
type timerKind uint8

const (
	timerBudget  timerKind = iota + 1 // a suspended task's deadline: id is the task
	timerSleep                        // shield.sleep: id is the pending op
	timerTimeout                      // shield.timeout: id is the pending op
)

type timerEntry struct {
	at   time.Time
	seq  uint64 // keeps entries due at the same instant in the order they were set
	kind timerKind
	id   uint64
	idx  int // its index in the heap; -1 once out of it
}

// timerHeap is a min-heap by time. An entry is removed as soon as what it
// would wake is gone (a finished task's budget, a cancelled timeout, the
// sleep of a task that timed out), so that a script cannot grow it without
// bound by setting and cancelling long timers.
type timerHeap struct {
	entries []*timerEntry
	seq     uint64
}

func (h *timerHeap) Len() int { return len(h.entries) }
func (h *timerHeap) Less(i, j int) bool {
	a, b := h.entries[i], h.entries[j]
	if a.at.Equal(b.at) {
		return a.seq < b.seq
	}
	return a.at.Before(b.at)
}
func (h *timerHeap) Swap(i, j int) {
	h.entries[i], h.entries[j] = h.entries[j], h.entries[i]
	h.entries[i].idx, h.entries[j].idx = i, j
}
func (h *timerHeap) Push(x any) {
	e := x.(*timerEntry)
	e.idx = len(h.entries)
	h.entries = append(h.entries, e)
}
func (h *timerHeap) Pop() any {
	n := len(h.entries) - 1
	e := h.entries[n]
	h.entries[n] = nil
	h.entries = h.entries[:n]
	e.idx = -1
	return e
}

func (h *timerHeap) push(at time.Time, kind timerKind, id uint64) *timerEntry {
	h.seq++
	e := &timerEntry{at: at, seq: h.seq, kind: kind, id: id}
	heap.Push(h, e)
	return e
}

// remove takes e out of the heap, if it is still in it.
func (h *timerHeap) remove(e *timerEntry) {
	if e != nil && e.idx >= 0 {
		heap.Remove(h, e.idx)
	}
}

// NextWake returns when the VM next needs Tick, and false when nothing is
// scheduled.
func (vm *VM) NextWake() (time.Time, bool) {
	if len(vm.timers.entries) == 0 {
		return time.Time{}, false
	}
	return vm.timers.entries[0].at, true
}

// Tick runs everything due at or before now: expired budgets of suspended
// tasks, finished sleeps, and shield.timeout callbacks, in time order.
func (vm *VM) Tick(now time.Time) {
	for len(vm.timers.entries) > 0 && !vm.timers.entries[0].at.After(now) {
		e := heap.Pop(&vm.timers).(*timerEntry)
		switch e.kind {
		case timerBudget:
			if t, ok := vm.tasks[e.id]; ok {
				vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.label()))
			}
		case timerSleep:
			if p, ok := vm.pending[e.id]; ok {
				delete(vm.pending, e.id)
				if p.task.awaits(e.id) {
					vm.resume(p.task, lua.LTrue)
				}
			}
		case timerTimeout:
			if p, ok := vm.pending[e.id]; ok {
				delete(vm.pending, e.id)
				t := &task{what: "shield.timeout callback", deadline: now.Add(vm.spec.HandlerTimeout)}
				vm.start(t, p.fn)
			}
		}
	}
}

// addPending registers an op, or returns false when the VM already holds
// max_pending of them.
func (vm *VM) addPending(p *pending) (uint64, bool) {
	if len(vm.pending) >= vm.spec.MaxPending {
		return 0, false
	}
	vm.nextID++
	vm.pending[vm.nextID] = p
	return vm.nextID, true
}

// HandleResult resumes the task waiting for r (a call's reply, a bind's
// outcome, an op's outcome). A result nobody waits for any more (its task timed out, or it
// was meant for the VM this one replaced) is dropped.
func (vm *VM) HandleResult(r *Result) {
	if r.Gen != vm.gen {
		return
	}
	p, ok := vm.pending[r.ID]
	if !ok || (p.kind != pendCall && p.kind != pendBind && p.kind != pendOp) {
		return
	}
	delete(vm.pending, r.ID)
	if p.kind == pendOp {
		p.cancel()
		if p.task.awaits(r.ID) && r.op != nil {
			vals := r.op(vm)
			if p.span.Active() {
				p.span.End(vm.opOutcomeCode(vals), r.opDone)
			}
			vm.resume(p.task, vals...)
		}
		return
	}
	if p.kind == pendCall {
		p.span.End(outcome(r.Err), time.Now())
	}
	if p.kind == pendBind && r.Err == nil {
		// From now on, frames of the old epoch still queued here are
		// stale (SPEC §4): only this VM could have rebound the session.
		vm.stale.mark(p.ref.SessionID, p.ref.Epoch, false, time.Now(), vm.spec.HandlerTimeout)
	}
	if !p.task.awaits(r.ID) {
		return
	}
	if r.Err != nil {
		vm.resume(p.task, lua.LFalse, vm.errorValue(r.Err.Code, r.Err.Message))
		return
	}
	if p.kind == pendBind {
		vm.resume(p.task, lua.LTrue, vm.refTable(r.Ref))
		return
	}
	args := make([]lua.LValue, 0, len(r.Values)+1)
	args = append(args, lua.LTrue)
	for _, b := range r.Values {
		v, err := DecodeValue(vm.l, b)
		if err != nil {
			vm.resume(p.task, lua.LFalse, vm.errorValue(codes.HandlerFailed, "result: "+err.Error()))
			return
		}
		args = append(args, v)
	}
	vm.resume(p.task, args...)
}
