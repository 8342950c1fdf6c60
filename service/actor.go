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
// that VM. It serves two lanes, the control lane first.
type actor struct {
	rt       *Runtime
	id       egress.ActorID
	vm       atomic.Pointer[luavm.VM] // read by the heap watcher; written by the loop
	control  *controlQueue
	business chan business // bounded by the actor's mailbox
	timer    *time.Timer
	armedAt  time.Time
	done     chan struct{} // closed when the loop has returned
	dead     atomic.Bool   // the VM could not be replaced: the actor serves nothing
	busy     atomic.Int32  // the VM's suspended tasks and pending operations, after each step
}

func newActor(rt *Runtime, vm *luavm.VM, mailbox int) *actor {
	a := &actor{
		rt:       rt,
		id:       egress.ActorID{Service: vm.Service(), Instance: vm.Instance()},
		control:  newControlQueue(),
		business: make(chan business, mailbox),
		done:     make(chan struct{}),
	}
	a.vm.Store(vm)
	vm.Attach(a)
	return a
}

// Depth is the number of messages waiting in the business lane.
func (a *actor) Depth() int { return len(a.business) }

// enqueue puts a message on the business lane, failing fast when it is full.
func (a *actor) enqueue(m business) *codes.Error {
	if a.dead.Load() {
		return codes.New(codes.Unavailable, "service %s instance %d is not running", a.id.Service, a.id.Instance)
	}
	select {
	case a.business <- m:
		return nil
	default:
		return codes.New(codes.Busy, "service %s instance %d: mailbox full", a.id.Service, a.id.Instance)
	}
}

// loop is the actor's goroutine. The Runtime owns it: it starts it and
// stops it with a quit message, then waits on done.
func (a *actor) loop() {
	defer close(a.done)
	a.timer = time.NewTimer(time.Hour)
	a.timer.Stop()
	defer a.timer.Stop()
	for {
		if m, ok := a.control.pop(); ok {
			if _, stop := m.(quit); stop {
				if !a.dead.Load() { // a dead actor's VM is closed already
					a.safely(func(vm *luavm.VM) { vm.Abort(codes.New(codes.Unavailable, "service %s is stopping", a.id.Service)) })
					a.vm.Load().Close()
				}
				return
			}
			if a.dead.Load() {
				a.rejectControl(m)
				continue
			}
			a.safely(func(vm *luavm.VM) { a.handleControl(vm, m) })
			continue
		}
		a.arm()
		select {
		case <-a.control.signal:
		case m := <-a.business:
			if a.dead.Load() {
				a.reject(m)
				continue
			}
			a.safely(func(vm *luavm.VM) { a.handleBusiness(vm, m) })
		case <-a.timer.C:
			a.armedAt = time.Time{}
			a.safely(func(vm *luavm.VM) { vm.Tick(time.Now()) })
		}
	}
}

// arm points the timer at the VM's next wake-up, touching it only when that
// changed: most messages schedule nothing.
func (a *actor) arm() {
	at, ok := a.vm.Load().NextWake()
	if !ok || at.Equal(a.armedAt) {
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

func (a *actor) handleControl(vm *luavm.VM, m any) {
	if h, ok := m.(runHook); ok {
		vm.RunHook(h.name, func(err *codes.Error) {
			if err != nil {
				h.done <- fmt.Errorf("service %s instance %d: %s: %w", a.id.Service, a.id.Instance, h.name, err)
				return
			}
			h.done <- nil
		})
		return
	}
	vm.HandleControl(m)
}

// safely runs f on the current VM, turning a Go panic into a VM
// replacement: the panic is logged and counted, every task of the old VM
// gets handler_failed, and a fresh VM runs its init (SPEC §6).
func (a *actor) safely(f func(vm *luavm.VM)) {
	if a.dead.Load() {
		return // the loop answers for a dead actor
	}
	vm := a.vm.Load()
	defer func() {
		r := recover()
		if r == nil && !vm.Crashed() {
			tasks, pending := vm.Busy()
			a.busy.Store(int32(tasks + pending))
			return
		}
		if r != nil {
			// The VM's logger names the service and instance.
			vm.Crash("go panic in actor", r, debug.Stack())
		}
		a.replace(vm)
	}()
	f(vm)
}

// replace respawns a crashed VM (luavm.VM.Respawn, the one replacement
// path) and runs the new VM's init before it takes messages.
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
	vm.RunHook("init", func(err *codes.Error) {
		if err != nil {
			a.rt.log.Error("init of replacement VM failed", "service", a.id.Service, "instance", a.id.Instance, "code", string(err.Code), "message", err.Message)
		}
	})
}

// drainDead answers what waits in the business lane of an actor whose VM
// is gone; later messages are refused at enqueue, and those that slip in
// between are answered by the loop.
func (a *actor) drainDead() {
	for {
		select {
		case m := <-a.business:
			a.reject(m)
		default:
			return
		}
	}
}

// reject answers a business message of a dead actor with unavailable.
func (a *actor) reject(m business) {
	unavailable := codes.New(codes.Unavailable, "service %s instance %d is not running", a.id.Service, a.id.Instance)
	switch m := m.(type) {
	case *ingress.ClientIngress:
		a.rt.respond(m.Answer(a.id.Service, nil, unavailable))
	case *luavm.Call:
		if m.ID != 0 {
			a.rt.Return(&luavm.Result{To: m.From, ID: m.ID, Gen: m.Gen, Err: unavailable, Reply: m.Reply})
		}
	}
}

// rejectControl handles a control message of a dead actor: a hook answers
// at once (so that Stop does not wait for it; there is no VM to stop, so
// stop succeeds), and replies and session messages have no VM to go to.
func (a *actor) rejectControl(m any) {
	h, ok := m.(runHook)
	switch {
	case !ok:
	case h.name == "stop" || h.name == "draining":
		h.done <- nil
	default:
		h.done <- fmt.Errorf("service %s instance %d: %s: %w", a.id.Service, a.id.Instance, h.name,
			codes.New(codes.Unavailable, "the instance is out of service"))
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

// Sink is where answers and pushes go.
func (a *actor) Sink() egress.Sink { return a.rt.Sink() }

var _ luavm.Host = (*actor)(nil)
