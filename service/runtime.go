// Package service runs Lua game services: one actor goroutine per VM, each
// with a control lane and a bounded business lane, the addressing of
// shield.send and shield.call between services, VM replacement after a
// crash, and the heap watch of lua.heap_limit_bytes (SPEC §4, §6 and §8).
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
)

// Metrics receives the runtime's events; the operations layer counts them.
type Metrics interface {
	VMRestarted(service string)
	HeapLimitHit()
	// VMGeneration reports the code version a service runs: 1 at start,
	// one more for each reload that replaced its VMs.
	VMGeneration(service string, gen int)
}

type noMetrics struct{}

func (noMetrics) VMRestarted(string)       {}
func (noMetrics) HeapLimitHit()            {}
func (noMetrics) VMGeneration(string, int) {}

// Options tune a Runtime.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
	Sink   egress.Sink  // may also be set later with SetSink
	// Metrics, nil: nothing is counted.
	Metrics Metrics
	// HeapLimitBytes is lua.heap_limit_bytes: above it, running handlers
	// are stopped with resource_exhausted. 0: no watch.
	HeapLimitBytes int64
	// HeapCheckEvery is how often the heap is read; 0: 20ms.
	HeapCheckEvery time.Duration
	// ControlLimit is the control lane depth at which an actor is
	// Crowded (session.max_sessions); 0: never.
	ControlLimit int
	// Node is this node's name: the end of every room id it makes
	// (docs/rooms.md §3.1).
	Node string
	// Queues are the matchmaking queues this node hosts (docs/rooms.md
	// §9.1); each forms rooms of a kind among the actors.
	Queues []Queue
	// Resources are what the VMs reach outside the runtime (the kv store,
	// the HTTP client): each is started, in order, before any VM's init,
	// and closed, in reverse order, after every actor has ended, so that
	// init and stop can use them.
	Resources []Resource
}

// Resource is something every VM of a runtime uses, whose life is the
// runtime's. Close is called exactly once, whether or not Start was, or
// succeeded.
type Resource interface {
	Start(ctx context.Context) error
	Close() error
}

// Actor describes one service to run: the spec of each of its VMs, by
// instance, and its business lane's capacity.
type Actor struct {
	Name    string
	Mailbox int
	VMs     []luavm.Spec
	// Room makes the service a room kind (docs/rooms.md): VMs holds one
	// spec, compiled at New for layer 3 and closed; each room gets a VM
	// of its own from it.
	Room *config.Room
	// Instances is the service's number of instances in the whole
	// cluster, when this node hosts only some of them (SPEC §10): VMs then
	// holds the hosted ones, each at its Spec.Instance, and the others are
	// reached through the Remote. 0: len(VMs), every instance is here.
	Instances int
}

// Remote carries what the runtime cannot deliver itself: calls to, and
// results for, instances another node of a cluster hosts. Without one
// (one process) every instance is local. Its methods never block.
type Remote interface {
	// Route delivers a call to instance to, hosted elsewhere, or fails
	// fast (unavailable: no live host).
	Route(to egress.ActorID, c *luavm.Call) *codes.Error
	// Return delivers a result to its caller's node.
	Return(r *luavm.Result)
	// PlaceRoom picks the node for a new room of kind (docs/rooms.md
	// §3.2), given this node's own live rooms of it and its max_rooms
	// (here false: it does not host the kind or is draining). No pick
	// is unavailable (no live host) or busy (every host full).
	PlaceRoom(kind string, live, max int, here bool) (string, *codes.Error)
	// CreateRoom sends shield.room.create's call c to node, which makes
	// the room and answers c.
	CreateRoom(node string, c *luavm.Call) *codes.Error
}

// Runtime is every running service of one node.
type Runtime struct {
	log      *slog.Logger
	metrics  Metrics
	opts     Options
	sink     atomic.Pointer[egress.Sink]
	remote   Remote                 // nil: one process; set before Start
	services map[string][]*actor    // by service name, indexed by instance; nil for an instance hosted elsewhere
	gens     map[string]int         // code generations, by service; the reloading goroutine's (Reload runs one at a time)
	outside  outsideCalls           // calls made from Go, see Call
	rooms    rooms                  // the room kinds and live rooms (rooms.go)
	queues   map[string]*queueActor // the match queues hosted here, by name (queues.go)
	stopping atomic.Bool            // set by Drain (or halt): no room is made, no ticket taken any more

	stopOnce  sync.Once
	closeOnce sync.Once // closes the resources
	watchStop chan struct{}
	watchDone chan struct{}
}

// New compiles every VM of every actor (Compile) and wraps each in an
// actor; nothing runs until Start. VMs are made by Compile only (a
// crashed VM respawns itself, luavm.VM.Respawn).
func New(actors []Actor, opts Options) (*Runtime, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	if opts.HeapCheckEvery <= 0 {
		opts.HeapCheckEvery = 20 * time.Millisecond
	}
	rt := &Runtime{log: opts.Logger, metrics: opts.Metrics, opts: opts, services: map[string][]*actor{}, gens: map[string]int{},
		rooms: rooms{kinds: map[string]*roomKind{}, byID: map[string]*actor{}, elsewhere: map[string]bool{}}, queues: map[string]*queueActor{}}
	for _, q := range opts.Queues {
		rt.queues[q.Config.Name] = newQueueActor(rt, q)
	}
	if opts.Sink != nil {
		rt.SetSink(opts.Sink)
	}
	vms, err := Compile(actors)
	if err != nil {
		return nil, err
	}
	for i, a := range actors {
		if a.Room != nil {
			// Layer 3 is done: the kind's VM closes, each room loads its
			// own; the closed one stays for a reload to compare with.
			var proto *luavm.VM
			for _, vm := range vms[i] {
				if vm != nil {
					vm.Close()
					proto = vm
				}
			}
			if len(a.VMs) > 0 {
				rt.rooms.kinds[a.Name] = &roomKind{spec: a.VMs[0], cfg: *a.Room, mailbox: a.Mailbox, proto: proto}
			} else {
				rt.rooms.elsewhere[a.Name] = true // hosted by other nodes of the cluster
			}
			rt.gens[a.Name] = 1
			opts.Metrics.VMGeneration(a.Name, 1)
			continue
		}
		rt.services[a.Name] = make([]*actor, len(vms[i]))
		for inst, vm := range vms[i] {
			if vm != nil {
				rt.services[a.Name][inst] = newActor(rt, vm, a.Mailbox)
			}
		}
		rt.gens[a.Name] = 1
		opts.Metrics.VMGeneration(a.Name, 1)
	}
	return rt, nil
}

// each runs f for every actor of this node, skipping the instances hosted
// elsewhere.
func (rt *Runtime) each(f func(a *actor)) {
	for _, actors := range rt.services {
		for _, a := range actors {
			if a != nil {
				f(a)
			}
		}
	}
	for _, a := range rt.roomActors() {
		f(a)
	}
}

// Compile compiles every VM of every actor (validation layer 3): the
// VMs of actors[i] by instance, nil at an instance hosted on another node.
// When VMs fail to compile it returns every actor's errors (as
// config.Errors, once per actor however many instances it has) and closes
// what it made. A reload compiles its new VMs with it too.
func Compile(actors []Actor) ([][]*luavm.VM, error) {
	var errs config.Errors
	out := make([][]*luavm.VM, len(actors))
	for i, a := range actors {
		out[i] = make([]*luavm.VM, max(a.Instances, len(a.VMs)))
		for _, spec := range a.VMs {
			vm, err := luavm.New(spec)
			if err != nil {
				var verrs config.Errors
				if errors.As(err, &verrs) {
					errs = append(errs, verrs...)
				} else {
					errs = append(errs, &config.Error{File: spec.ConfigFile, Line: spec.ScriptLine, Actor: spec.Service, Msg: err.Error()})
				}
				break // the other instances run the same script: one report is enough
			}
			out[i][spec.Instance] = vm
		}
	}
	if len(errs) > 0 {
		for _, vms := range out {
			for _, vm := range vms {
				if vm != nil {
					vm.Close()
				}
			}
		}
		return nil, errs.Err()
	}
	return out, nil
}

// Close releases the VMs and the resources of a runtime that was never
// started (`gateway check`, a start that failed before Start).
func (rt *Runtime) Close() {
	rt.each(func(a *actor) { a.vm.Load().Close() })
	rt.closeResources()
}

// closeResources closes every resource once, the last started first.
func (rt *Runtime) closeResources() {
	rt.closeOnce.Do(func() {
		res := rt.opts.Resources
		for i := len(res) - 1; i >= 0; i-- {
			if err := res[i].Close(); err != nil {
				rt.log.Error("closing a runtime resource", "resource", fmt.Sprintf("%T", res[i]), "error", err)
			}
		}
	})
}

// VMs is the number of VMs this node runs of a service, of every service
// when service is "".
func (rt *Runtime) VMs(service string) int {
	n := 0
	for name, actors := range rt.services {
		if service != "" && name != service {
			continue
		}
		for _, a := range actors {
			if a != nil {
				n++
			}
		}
	}
	return n
}

// SetRemote attaches the cluster transport that carries calls and results
// to the instances other nodes host. It must be set before Start.
func (rt *Runtime) SetRemote(r Remote) { rt.remote = r }

// Hosted reports whether this node runs the VM id names.
func (rt *Runtime) Hosted(id egress.ActorID) bool { return rt.actor(id) != nil }

// VM returns the VM of a service's instance, for tests and `gateway
// check` only: once the runtime started, only its actor may touch it.
func (rt *Runtime) VM(service string, instance int) *luavm.VM {
	if a := rt.actor(egress.ActorID{Service: service, Instance: instance}); a != nil {
		return a.vm.Load()
	}
	return nil
}

// SetSink attaches where answers, pushes and binds go.
func (rt *Runtime) SetSink(s egress.Sink) { rt.sink.Store(&s) }

// Sink returns the attached sink, or nil.
func (rt *Runtime) Sink() egress.Sink {
	if p := rt.sink.Load(); p != nil {
		return *p
	}
	return nil
}

func (rt *Runtime) respond(r *egress.Response) {
	if s := rt.Sink(); s != nil {
		s.Respond(r)
	}
}

// Start starts the resources, then runs every actor and every VM's init,
// and returns when all inits have finished; a resource or an init that
// fails fails the start (the runtime is then stopped, and a later Stop
// does nothing). ctx bounds the wait.
func (rt *Runtime) Start(ctx context.Context) error {
	for _, r := range rt.opts.Resources {
		if err := r.Start(ctx); err != nil {
			rt.stopOnce.Do(rt.Close)
			return err
		}
	}
	rt.each(func(a *actor) { go a.loop() })
	rt.startQueues()
	rt.watchStop, rt.watchDone = make(chan struct{}), make(chan struct{})
	go rt.watchHeap()
	if err := rt.Hook(ctx, "init"); err != nil {
		rt.stopOnce.Do(rt.halt)
		return err
	}
	return nil
}

// Stop runs every VM's stop hook, waits for them (bounded by ctx), then
// ends every actor: whatever is still in flight fails with unavailable.
// It returns when every actor goroutine has exited. Calling it twice, or
// after a failed Start, is harmless.
func (rt *Runtime) Stop(ctx context.Context) error {
	var err error
	rt.stopOnce.Do(func() {
		if rt.watchStop == nil {
			return // never started
		}
		err = rt.Hook(ctx, "stop")
		rt.halt()
	})
	return err
}

// Drain is the start of a node's drain (SPEC §9, docs/rooms.md §10.3):
// from now on the node makes no room and its queues take no ticket
// (client_rpc.unavailable); what lives goes on until the runtime stops.
func (rt *Runtime) Drain() { rt.stopping.Store(true) }

// Draining reports whether Drain (or Stop) has begun: a cluster node says
// so in its heartbeat, and placement passes it over.
func (rt *Runtime) Draining() bool { return rt.stopping.Load() }

// halt ends every actor and the heap watcher, then closes the resources.
// It runs once, under stopOnce.
func (rt *Runtime) halt() {
	rt.stopping.Store(true)
	rt.stopQueues() // no match forms any more
	rt.each(func(a *actor) { a.control.push(quit{}) })
	rt.each(func(a *actor) { <-a.done })
	close(rt.watchStop)
	<-rt.watchDone
	rt.closeResources()
}

// Hook runs one of the VMs' own hooks (init, stop, draining) in every VM
// at once and collects the failures; ctx bounds the wait.
func (rt *Runtime) Hook(ctx context.Context, name string) error {
	var n int
	done := make(chan error, rt.VMs(""))
	rt.each(func(a *actor) {
		a.control.push(runHook{name: name, done: done})
		n++
	})
	var errs []error
	for ; n > 0; n-- {
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("service: %s: %w", name, ctx.Err()))...)
		}
	}
	return errors.Join(errs...)
}

// Busy reports the runs in flight in every VM (tasks suspended in a call,
// a sleep or a bind) and the messages waiting for one, which a drain
// waits for. Timers not yet due are not runs.
func (rt *Runtime) Busy() int {
	n := 0
	rt.each(func(a *actor) { n += int(a.busy.Load()) + a.Depth() })
	return n
}

// Services returns the service names.
func (rt *Runtime) Services() []string {
	names := make([]string, 0, len(rt.services))
	for name := range rt.services {
		names = append(names, name)
	}
	return names
}

// MailboxDepth is the number of messages waiting in a service's business
// lanes, over all its instances.
func (rt *Runtime) MailboxDepth(service string) int {
	n := 0
	for _, a := range rt.services[service] {
		if a != nil {
			n += a.Depth()
		}
	}
	return n
}

// ControlDepth is the number of messages waiting on a service's control
// lanes (results, session lifecycle messages, hooks, reload steps), over
// all its instances: shield_control_depth{service}.
func (rt *Runtime) ControlDepth(service string) int {
	n := 0
	for _, a := range rt.services[service] {
		if a != nil {
			n += a.ControlDepth()
		}
	}
	return n
}

func (rt *Runtime) actor(id egress.ActorID) *actor {
	if id.Room != "" {
		return rt.room(id.Room)
	}
	actors := rt.services[id.Service]
	if id.Instance < 0 || id.Instance >= len(actors) {
		return nil
	}
	return actors[id.Instance]
}

// Shard returns the VM that key maps to: fnv1a64(key) % instances.
func Shard(key string, instances int) int {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime
	}
	return int(h % uint64(instances))
}

// Pick resolves a service and a shard key (a player_id) to one VM, as
// shield.client.bind does: a service with one instance ignores the key.
func (rt *Runtime) Pick(service, key string) (egress.ActorID, *codes.Error) {
	n := len(rt.services[service])
	if n == 0 {
		return egress.ActorID{}, codes.New(codes.Unavailable, "no service %q", service)
	}
	return egress.ActorID{Service: service, Instance: Shard(key, n)}, nil
}

// Entry is a new session's first target on a listener whose entry_service
// is service: the VM session_id % instances (SPEC §4).
func (rt *Runtime) Entry(service string, sessionID uint64) (egress.ActorID, *codes.Error) {
	n := len(rt.services[service])
	if n == 0 {
		return egress.ActorID{}, codes.New(codes.Unavailable, "no service %q", service)
	}
	return egress.ActorID{Service: service, Instance: int(sessionID % uint64(n))}, nil
}

// Route delivers a shield.call or shield.send to its service's business
// lane: unavailable for an unknown service, for a plain name when the
// service has several instances, and for a hook or a client handler;
// busy when the lane is full. An instance hosted elsewhere is the
// Remote's to reach (its node checks the method).
func (rt *Runtime) Route(c *luavm.Call) *codes.Error {
	switch {
	case c.To.Queue != "":
		return rt.routeQueue(c)
	case c.To.Room == luavm.CreateRoom:
		return rt.createRoom(c)
	case c.To.Room != "":
		return rt.routeRoom(c)
	case rt.IsRoomKind(c.To.Service):
		return codes.New(codes.Unavailable, "%q is a room service: address a room as {room = id}", c.To.Service)
	}
	actors := rt.services[c.To.Service]
	i := 0
	switch {
	case len(actors) == 0:
		return codes.New(codes.Unavailable, "no service %q", c.To.Service)
	case len(actors) == 1:
	case !c.To.HasKey:
		return codes.New(codes.Unavailable, "service %q has %d instances: address it as {service = %q, key = ...}", c.To.Service, len(actors), c.To.Service)
	default:
		i = Shard(c.To.Key, len(actors))
	}
	if a := actors[i]; a != nil {
		// A hook or a client handler is not a method (SPEC §8): known at
		// once, so a send says so too.
		if err := a.vm.Load().MethodError(c.Method); err != nil {
			return err
		}
		return a.enqueue(c)
	}
	if rt.remote == nil {
		return codes.New(codes.Unavailable, "service %s instance %d is not hosted here", c.To.Service, i)
	}
	return rt.remote.Route(egress.ActorID{Service: c.To.Service, Instance: i}, c)
}

// Return delivers a result to its VM's control lane, on this node or, in
// a cluster, the caller's.
func (rt *Runtime) Return(r *luavm.Result) {
	if rt.returnOutside(r) || rt.returnQueue(r) {
		return
	}
	if a := rt.actor(r.To); a != nil && r.Reply == "" {
		a.control.push(r)
		return
	}
	if rt.remote != nil {
		rt.remote.Return(r)
	}
}

// Deliver puts a client frame on its target's business lane. A frame it
// takes is the runtime's: its VM gives it back for reuse once answered
// (ingress.ClientIngress.Release); a refused one stays the caller's.
func (rt *Runtime) Deliver(target egress.ActorID, in *ingress.ClientIngress) *codes.Error {
	if target.Room != "" {
		// Under the rooms' read lock: a room that closes answers what
		// its lane held, and nothing is pushed after that.
		rt.rooms.mu.RLock()
		defer rt.rooms.mu.RUnlock()
		if a := rt.rooms.byID[target.Room]; a == nil || a.dead.Load() {
			return codes.New(codes.RoomNotFound, "room %s is gone", target.Room)
		}
	}
	a := rt.actor(target)
	if a == nil {
		return codes.New(codes.Unavailable, "no service %s instance %d", target.Service, target.Instance)
	}
	stampQueued(in)
	return a.enqueue(in)
}

// stampQueued marks when a traced frame entered its lane: the start of
// its queue span (docs/tracing.md). An untraced frame costs the test.
func stampQueued(in *ingress.ClientIngress) {
	if in.Trace.Valid() {
		in.Enqueued = time.Now()
	}
}

// DeliverAll is Deliver for several frames to one target, in order, in one
// hand-off: it takes as many as the target's lane has room for and returns
// how many, and for the others the refusal they all share (busy for a
// full lane, unavailable). Like Deliver, what it takes is the runtime's.
func (rt *Runtime) DeliverAll(target egress.ActorID, ins []*ingress.ClientIngress) (int, *codes.Error) {
	if target.Room != "" {
		n := 0
		for _, in := range ins {
			if err := rt.Deliver(target, in); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	}
	a := rt.actor(target)
	if a == nil {
		return 0, codes.New(codes.Unavailable, "no service %s instance %d", target.Service, target.Instance)
	}
	if a.dead.Load() {
		return 0, codes.New(codes.Unavailable, "service %s instance %d is not running", a.id.Service, a.id.Instance)
	}
	for _, in := range ins {
		stampQueued(in)
	}
	n := a.business.pushAll(ins)
	if n < len(ins) {
		return n, codes.New(codes.Busy, "service %s instance %d: mailbox full", a.id.Service, a.id.Instance)
	}
	return n, nil
}

// Crowded reports whether target, hosted here, holds ControlLimit
// messages or more on its control lane. That lane never drops, so its
// bound comes from refusing what would add to it: while a target is
// crowded the gateway admits no new session to it, resumes none, binds
// none to it and suspends none of its sessions (docs/architecture.md
// "The control lane's bound").
func (rt *Runtime) Crowded(target egress.ActorID) bool {
	if rt.opts.ControlLimit <= 0 {
		return false
	}
	a := rt.actor(target)
	return a != nil && a.ControlDepth() >= rt.opts.ControlLimit
}

// Control puts a session lifecycle message on its target's control lane
// (ingress.Bound, Suspended, Resumed, Disconnected). It is never dropped.
func (rt *Runtime) Control(target egress.ActorID, m any) {
	if target.Room != "" {
		rt.controlRoom(target, m)
		return
	}
	if a := rt.actor(target); a != nil {
		a.control.push(m)
	}
}
