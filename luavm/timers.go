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
}

// timerHeap is a min-heap by time. Entries whose task or pending op is
// gone stay until they come up and are then skipped: cheaper than removal.
type timerHeap struct {
	entries []timerEntry
	seq     uint64
}

func (h *timerHeap) Len() int { return len(h.entries) }
func (h *timerHeap) Less(i, j int) bool {
	a, b := &h.entries[i], &h.entries[j]
	if a.at.Equal(b.at) {
		return a.seq < b.seq
	}
	return a.at.Before(b.at)
}
func (h *timerHeap) Swap(i, j int) { h.entries[i], h.entries[j] = h.entries[j], h.entries[i] }
func (h *timerHeap) Push(x any)    { h.entries = append(h.entries, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	n := len(h.entries) - 1
	e := h.entries[n]
	h.entries = h.entries[:n]
	return e
}

func (h *timerHeap) push(at time.Time, kind timerKind, id uint64) {
	h.seq++
	heap.Push(h, timerEntry{at: at, seq: h.seq, kind: kind, id: id})
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
		e := heap.Pop(&vm.timers).(timerEntry)
		switch e.kind {
		case timerBudget:
			if t, ok := vm.tasks[e.id]; ok {
				vm.finish(t, nil, codes.New(codes.Timeout, "%s ran out of its budget", t.what))
			}
		case timerSleep:
			if p, ok := vm.pending[e.id]; ok {
				delete(vm.pending, e.id)
				if !p.task.done {
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

// HandleResult resumes the task waiting for r (a call's reply). A result
// nobody waits for any more (its task timed out) is dropped.
func (vm *VM) HandleResult(r *Result) {
	p, ok := vm.pending[r.ID]
	if !ok || p.kind != pendCall {
		return
	}
	delete(vm.pending, r.ID)
	if p.task.done {
		return
	}
	if r.Err != nil {
		vm.resume(p.task, lua.LFalse, vm.errorValue(r.Err.Code, r.Err.Message))
		return
	}
	args := make([]lua.LValue, 0, len(r.Values)+1)
	args = append(args, lua.LTrue)
	for _, v := range r.Values {
		args = append(args, ToLua(vm.L, v))
	}
	vm.resume(p.task, args...)
}
