package service

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
)

// actor runs one VM on one goroutine: the only goroutine that ever touches
// that VM. It serves two lanes, the control lane first. During a reload it
// may hold two more VMs: the one being prepared to replace the current
// one, and old ones finishing their runs.
type actor struct {
	rt       *Runtime
	id       egress.ActorID
	vm       atomic.Pointer[luavm.VM] // the current VM; read by the heap watcher and Route; written by the loop
	control  *controlQueue
	business *businessLane // bounded by the actor's mailbox
	timer    *time.Timer
	armedAt  time.Time
	done     chan struct{} // closed when the loop has returned
	dead     atomic.Bool   // the VM could not be replaced: the actor serves nothing
	busy     atomic.Int32  // the VMs' suspended tasks (runs in flight), after each step

	// answers are the VM's answers of the step in progress, which the
	// loop hands to the gateway together (flushAnswers); out is the Sink
	// the VM sends through, which buffers them.
	answers    []egress.Response
	answerPtrs []*egress.Response // RespondAll's argument, reused
	out        answerSink

	// The reload's state, the loop's own.
	paused   bool         // a swap is being prepared: business messages wait
	prepared *luavm.VM    // the VM a swap prepares; nil when none
	one      [1]*luavm.VM // vms' result outside a reload
	held     []any        // session messages that came while paused, for the VM that wins
	old      []*luavm.VM  // replaced VMs finishing their runs

	isRoom   bool      // a room's actor (rooms.go): ticks, and it ends when the room closes
	room     *roomInfo // a room's: its creation and what its VM publishes (rooms.go)
	roomOver bool      // the room closed: the loop ends after this step
}

func newActor(rt *Runtime, vm *luavm.VM, mailbox int) *actor {
	a := &actor{
		rt:       rt,
		id:       egress.ActorID{Service: vm.Service(), Instance: vm.Instance()},
		control:  newControlQueue(),
		business: newBusinessLane(mailbox),
		done:     make(chan struct{}),
	}
	a.out.a = a
	a.vm.Store(vm)
	vm.Attach(a)
	return a
}

// Depth is the number of messages waiting in the business lane.
func (a *actor) Depth() int { return a.business.len() }

// ControlDepth is the number of messages waiting on the control lane.
func (a *actor) ControlDepth() int { return int(a.control.n.Load()) }

// enqueue puts a message on the business lane, failing fast when it is full.
func (a *actor) enqueue(m business) *codes.Error {
	if a.dead.Load() {
		return codes.New(codes.Unavailable, "service %s instance %d is not running", a.id.Service, a.id.Instance)
	}
	if !a.business.push(m) {
		return codes.New(codes.Busy, "service %s instance %d: mailbox full", a.id.Service, a.id.Instance)
	}
	return nil
}

// loop is the actor's goroutine. The Runtime owns it: it starts it and
// stops it with a quit message, then waits on done.
func (a *actor) loop() {
	defer close(a.done)
	defer a.flushAnswers() // what the last runs answered, stop's aborts included
	a.timer = time.NewTimer(time.Hour)
	a.timer.Stop()
	defer a.timer.Stop()
	for {
		if len(a.answers) >= answerBatch {
			a.flushAnswers()
		}
		if m, ok := a.control.pop(); ok {
			if _, stop := m.(quit); stop {
				if a.isRoom {
					a.closeRoomNow()
					return
				}
				a.stop()
				return
			}
			if a.dead.Load() {
				a.rejectControl(m)
				continue
			}
			a.handleControl(m)
			continue
		}
		if a.isRoom {
			again, over := a.roomStep()
			if over {
				a.flushAnswers()
				a.stop()
				a.endRoom()
				return
			}
			if again {
				continue
			}
		}
		if !a.paused {
			if m, ok := a.business.pop(); ok {
				if a.dead.Load() {
					a.reject(m)
					continue
				}
				a.safely(a.vm.Load(), func(vm *luavm.VM) { a.handleBusiness(vm, m) })
				continue
			}
		}
		// Nothing left to do at once: the answers of this step go out
		// before the loop waits. A Go panic while handing them over (the
		// Sink's) crashes the VM as one in a run would.
		if len(a.answers) > 0 {
			if a.dead.Load() {
				a.flushAnswers()
			} else {
				a.safely(a.vm.Load(), func(*luavm.VM) { a.flushAnswers() })
			}
		}
		a.arm()
		lane := a.business.signal
		if a.paused {
			lane = nil // business messages wait for the swap to end
		}
		select {
		case <-a.control.signal:
		case <-lane:
		case <-a.timer.C:
			a.armedAt = time.Time{}
			now := time.Now()
			for _, vm := range a.vms() {
				a.safely(vm, func(vm *luavm.VM) { vm.Tick(now) })
			}
		}
	}
}

// stop ends every VM: what is in flight fails with unavailable.
func (a *actor) stop() {
	if a.dead.Load() { // a dead actor's VM is closed already
		return
	}
	for _, vm := range a.vms() {
		a.safely(vm, func(vm *luavm.VM) { vm.Abort(codes.New(codes.Unavailable, "service %s is stopping", a.id.Service)) })
		vm.Close()
	}
}

// vms is every VM the actor holds: the current one, the one being
// prepared, and the old ones finishing their runs. Outside a reload that
// is the current one alone, in a slice the actor keeps, so that the loop's
// every turn (arm, reap) allocates nothing.
func (a *actor) vms() []*luavm.VM {
	if len(a.old) == 0 && a.prepared == nil {
		a.one[0] = a.vm.Load()
		return a.one[:]
	}
	out := append([]*luavm.VM{a.vm.Load()}, a.old...)
	if a.prepared != nil {
		out = append(out, a.prepared)
	}
	return out
}

// vmOf is the VM a result is for, by its generation, or nil.
func (a *actor) vmOf(gen uint64) *luavm.VM {
	for _, vm := range a.vms() {
		if vm.Gen() == gen {
			return vm
		}
	}
	return nil
}

// arm points the timer at the VMs' next wake-up, touching it only when
// that changed: most messages schedule nothing.
func (a *actor) arm() {
	var at time.Time
	for _, vm := range a.vms() {
		if t, ok := vm.NextWake(); ok && (at.IsZero() || t.Before(at)) {
			at = t
		}
		if t, ok := vm.RoomNext(); ok && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	if at.IsZero() || at.Equal(a.armedAt) {
		return
	}
	a.armedAt = at
	a.timer.Reset(time.Until(at))
}

func (a *actor) handleBusiness(vm *luavm.VM, m business) {
	switch m := m.(type) {
	case *ingress.ClientIngress:
		vm.HandleIngress(m)
	case *luavm.Call:
		vm.HandleCall(m)
	default:
		panic(fmt.Sprintf("service: unknown business message %T", m))
	}
}

// handleControl serves one control message.
func (a *actor) handleControl(m any) {
	switch m := m.(type) {
	case *luavm.Result:
		// A result goes to the VM that waits for it, whichever that is.
		if vm := a.vmOf(m.Gen); vm != nil {
			a.safely(vm, func(vm *luavm.VM) { vm.HandleResult(m) })
		}
	case runHook:
		a.safely(a.vm.Load(), func(vm *luavm.VM) {
			vm.RunHook(m.name, func(err *codes.Error) {
				if err != nil {
					m.done <- fmt.Errorf("service %s instance %d: %s: %w", a.id.Service, a.id.Instance, m.name, err)
					return
				}
				m.done <- nil
			})
		})
	case prepareSwap:
		a.prepare(m)
	case commitSwap:
		a.commit()
		m.done <- struct{}{}
	case abortSwap:
		a.abort()
		m.done <- struct{}{}
	case setLimits:
		a.business.setLimit(m.mailbox)
		for _, vm := range a.vms() {
			vm.SetLimits(time.Duration(m.handlerTimeout), m.maxPending)
			if m.keep {
				vm.SetSchemas(m.schemas)
			}
		}
		m.done <- struct{}{}
	default:
		if a.paused {
			// A session message during a swap belongs to the VM that
			// wins it: the old one's state was already saved.
			a.held = append(a.held, m)
			return
		}
		a.safely(a.vm.Load(), func(vm *luavm.VM) { vm.HandleControl(m) })
	}
}

// prepare is a reload's first step (SPEC §12): the actor stops taking
// business messages, the old VM's reload_save runs, and next starts with
// reload_load (when both hooks exist) or init. done gets the outcome;
// the actor stays paused until commit or abort.
func (a *actor) prepare(m prepareSwap) {
	old := a.vm.Load()
	a.paused = true
	a.prepared = m.next
	m.next.Attach(a)
	start := func(state []byte) {
		if a.prepared != m.next {
			return // abandoned meanwhile (the reload's deadline passed)
		}
		a.safely(m.next, func(next *luavm.VM) {
			finished := func(err *codes.Error) {
				if err != nil {
					m.done <- fmt.Errorf("service %s instance %d: %w", a.id.Service, a.id.Instance, err)
					return
				}
				m.done <- nil
			}
			if old.HasHook("reload_save") && next.HasHook("reload_load") {
				next.RunLoad(state, finished)
			} else {
				next.RunHook("init", finished)
			}
		})
	}
	a.safely(old, func(old *luavm.VM) {
		old.RunSave(func(state []byte, err *codes.Error) {
			if err != nil {
				m.done <- fmt.Errorf("service %s instance %d: reload_save: %w", a.id.Service, a.id.Instance, err)
				return
			}
			start(state)
		})
	})
}

// commit makes the prepared VM the actor's: new messages go to it from
// now on; the old one's timers are dropped and it closes once its runs
// have finished (their answers and replies included).
func (a *actor) commit() {
	old := a.vm.Load()
	old.DropTimers()
	a.old = append(a.old, old)
	a.vm.Store(a.prepared)
	a.prepared = nil
	a.resume()
	a.reap()
}

// abort drops the prepared VM: the old one goes on.
func (a *actor) abort() {
	if vm := a.prepared; vm != nil {
		a.prepared = nil
		func() {
			defer func() { _ = recover() }()
			vm.Abort(codes.New(codes.Unavailable, "the reload of service %s was abandoned", a.id.Service))
		}()
		vm.Close()
	}
	a.resume()
}

// resume ends the pause: the session messages held go to the current VM,
// in order, and business messages flow again.
func (a *actor) resume() {
	a.paused = false
	held := a.held
	a.held = nil
	for _, m := range held {
		a.safely(a.vm.Load(), func(vm *luavm.VM) { vm.HandleControl(m) })
	}
	a.armedAt = time.Time{}
}

// safely runs f on vm, turning a Go panic into a VM replacement when vm
// is the current one (the panic is logged and counted, every task of the
// old VM gets handler_failed, and a fresh VM runs its init, SPEC §6); an
// old VM that crashes while finishing its runs is closed instead. After
// each step, old VMs without runs left are closed.
func (a *actor) safely(vm *luavm.VM, f func(vm *luavm.VM)) {
	if a.dead.Load() {
		return // the loop answers for a dead actor
	}
	defer func() {
		r := recover()
		if r != nil {
			// The VM's logger names the service and instance.
			vm.Crash("go panic in actor", r, debug.Stack())
		}
		switch {
		case vm.Crashed() && vm == a.vm.Load():
			a.replace(vm)
		case vm.Crashed() && vm != a.prepared:
			vm.Abort(vm.CrashError())
			a.closeOld(vm)
		}
		a.reap()
	}()
	f(vm)
}

// reap closes the old VMs whose runs have all finished, and counts the
// runs in flight.
func (a *actor) reap() {
	n := 0
	for _, vm := range a.vms() {
		tasks, _ := vm.Busy()
		if tasks == 0 && vm != a.vm.Load() && vm != a.prepared {
			a.closeOld(vm)
			continue
		}
		n += tasks
	}
	if a.busy.Load() != int32(n) {
		a.busy.Store(int32(n)) // a store is a locked instruction: most steps change nothing
	}
}

// closeOld closes and forgets an old VM.
func (a *actor) closeOld(vm *luavm.VM) {
	for i, o := range a.old {
		if o == vm {
			a.old = append(a.old[:i], a.old[i+1:]...)
			vm.Close()
			return
		}
	}
}

// replace respawns a crashed VM (luavm.VM.Respawn, the one replacement
// path: the same code, never newer files) and runs the new VM's init
// before it takes messages.
func (a *actor) replace(old *luavm.VM) {
	a.rt.metrics.VMRestarted(a.id.Service)
	vm, err := old.Respawn()
	if err != nil {
		a.rt.log.Error("cannot replace VM; the instance is out of service", "service", a.id.Service, "instance", a.id.Instance, "error", err)
		a.dead.Store(true)
		a.busy.Store(0)
		a.drainDead()
		return
	}
	a.vm.Store(vm)
	a.armedAt = time.Time{}
	// The fresh VM takes messages only once its init ran (SPEC §8): if
	// init raises, it is not started, and the instance is out of service.
	a.paused = true
	vm.RunHook("init", func(err *codes.Error) {
		a.paused = false
		if err != nil {
			a.rt.log.Error("init of replacement VM failed; the instance is out of service", "service", a.id.Service,
				"instance", a.id.Instance, "code", string(err.Code), "message", err.Message)
			a.kill()
		}
	})
}

// kill takes an actor out of service: its VM is closed, and everything
// sent to it from now on is answered unavailable.
func (a *actor) kill() {
	vm := a.vm.Load()
	a.dead.Store(true)
	a.busy.Store(0)
	func() {
		defer func() { _ = recover() }()
		vm.Abort(codes.New(codes.Unavailable, "service %s instance %d is not running", a.id.Service, a.id.Instance))
	}()
	vm.Close()
	a.drainDead()
}

// drainDead answers what waits in the business lane of an actor whose VM
// is gone, and for a closed room its control lane too (a join's Bound
// sends the session home); later messages are refused at enqueue, and
// those that slip in between are answered by the loop.
func (a *actor) drainDead() {
	for {
		m, ok := a.business.pop()
		if !ok {
			break
		}
		a.reject(m)
	}
	if !a.isRoom {
		return
	}
	// A room's loop ends with its close (endRoom): what its control lane
	// still holds has no VM to go to, and nothing is pushed there after.
	for {
		m, ok := a.control.pop()
		if !ok {
			return
		}
		a.rejectControl(m)
	}
}

// reject answers a business message of a dead actor with unavailable.
func (a *actor) reject(m business) {
	unavailable := codes.New(codes.Unavailable, "service %s instance %d is not running", a.id.Service, a.id.Instance)
	if a.isRoom {
		unavailable = codes.New(codes.RoomNotFound, "room %s is closed", a.id.Room)
	}
	switch m := m.(type) {
	case *ingress.ClientIngress:
		a.rt.respond(m.Answer(a.id.Service, nil, unavailable))
		m.Release()
	case *luavm.Call:
		if m.ID != 0 {
			a.rt.Return(&luavm.Result{To: m.From, ID: m.ID, Gen: m.Gen, Err: unavailable, Reply: m.Reply})
		}
	}
}

// rejectControl handles a control message of a dead actor: a hook or a
// reload step answers at once (there is no VM to stop, so stop succeeds;
// there is none to reload either), and replies and session messages have
// no VM to go to.
func (a *actor) rejectControl(m any) {
	switch m := m.(type) {
	case runHook:
		if m.name == "stop" || m.name == "draining" {
			m.done <- nil
			return
		}
		m.done <- fmt.Errorf("service %s instance %d: %s: %w", a.id.Service, a.id.Instance, m.name,
			codes.New(codes.Unavailable, "the instance is out of service"))
	case prepareSwap:
		m.next.Close()
		m.done <- fmt.Errorf("service %s instance %d: %w", a.id.Service, a.id.Instance,
			codes.New(codes.Unavailable, "the instance is out of service"))
	case commitSwap:
		m.done <- struct{}{}
	case abortSwap:
		m.done <- struct{}{}
	case setLimits:
		a.business.setLimit(m.mailbox)
		m.done <- struct{}{}
	case *ingress.Bound:
		if a.isRoom {
			// A join's bind the closed room never heard: the session
			// goes home, with its END.
			a.rt.bindBackClosed(a.id, m)
		}
	}
}

// Host, for the VM.

// Self names the actor's VM.
func (a *actor) Self() egress.ActorID { return a.id }

// Pick resolves a bind's target.
func (a *actor) Pick(service, key string) (egress.ActorID, *codes.Error) {
	return a.rt.Pick(service, key)
}

// Route delivers a shield.call or shield.send.
func (a *actor) Route(c *luavm.Call) *codes.Error { return a.rt.Route(c) }

// Return delivers a result to its caller's control lane.
func (a *actor) Return(r *luavm.Result) { a.rt.Return(r) }

// Sink is where answers and pushes go: the runtime's, through the actor's
// answer buffer; nil when the runtime has none.
func (a *actor) Sink() egress.Sink {
	if a.rt.Sink() == nil {
		return nil
	}
	return &a.out
}

var _ luavm.Host = (*actor)(nil)
