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
}

type noMetrics struct{}

func (noMetrics) VMRestarted(string) {}
func (noMetrics) HeapLimitHit()      {}

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
}

// Runtime is every running service of one node.
type Runtime struct {
	log      *slog.Logger
	metrics  Metrics
	opts     Options
	sink     atomic.Pointer[egress.Sink]
	services map[string][]*actor // by service name, indexed by instance

	stopOnce  sync.Once
	closeOnce sync.Once // closes the resources
	watchStop chan struct{}
	watchDone chan struct{}
}

// New compiles every VM of every actor (validation layer 3) and wraps each
// in an actor; nothing runs until Start. It is the one place VMs are made
// (a crashed VM respawns itself, luavm.VM.Respawn). When VMs fail to
// compile it returns every actor's errors (as config.Errors, once per
// actor however many instances it has) and closes what it made.
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
	rt := &Runtime{log: opts.Logger, metrics: opts.Metrics, opts: opts, services: map[string][]*actor{}}
	if opts.Sink != nil {
		rt.SetSink(opts.Sink)
	}
	var errs config.Errors
	for _, a := range actors {
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
			rt.services[a.Name] = append(rt.services[a.Name], newActor(rt, vm, a.Mailbox))
		}
	}
	if len(errs) > 0 {
		rt.Close()
		return nil, errs.Err()
	}
	return rt, nil
}

// Close releases the VMs and the resources of a runtime that was never
// started (`gateway check`, a start that failed before Start).
func (rt *Runtime) Close() {
	for _, actors := range rt.services {
		for _, a := range actors {
			a.vm.Load().Close()
		}
	}
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

// VMs is the number of VMs of a service, every service when service is "".
func (rt *Runtime) VMs(service string) int {
	if service != "" {
		return len(rt.services[service])
	}
	n := 0
	for _, actors := range rt.services {
		n += len(actors)
	}
	return n
}

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
	for _, actors := range rt.services {
		for _, a := range actors {
			go a.loop()
		}
	}
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

// halt ends every actor and the heap watcher, then closes the resources.
// It runs once, under stopOnce.
func (rt *Runtime) halt() {
	for _, actors := range rt.services {
		for _, a := range actors {
			a.control.push(quit{})
		}
	}
	for _, actors := range rt.services {
		for _, a := range actors {
			<-a.done
		}
	}
	close(rt.watchStop)
	<-rt.watchDone
	rt.closeResources()
}

// Hook runs one of the VMs' own hooks (init, stop, draining) in every VM
// at once and collects the failures; ctx bounds the wait.
func (rt *Runtime) Hook(ctx context.Context, name string) error {
	var n int
	done := make(chan error, rt.VMs(""))
	for _, actors := range rt.services {
		for _, a := range actors {
			a.control.push(runHook{name: name, done: done})
			n++
		}
	}
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

// Busy reports the runs in flight in every VM (suspended tasks and
// pending calls and timers), which a drain waits for.
func (rt *Runtime) Busy() int {
	n := 0
	for _, actors := range rt.services {
		for _, a := range actors {
			n += int(a.busy.Load()) + a.Depth()
		}
	}
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
		n += a.Depth()
	}
	return n
}

func (rt *Runtime) actor(id egress.ActorID) *actor {
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
// lane: unavailable for an unknown service, or for a plain name when the
// service has several instances; busy when the lane is full.
func (rt *Runtime) Route(c *luavm.Call) *codes.Error {
	actors := rt.services[c.To.Service]
	switch {
	case len(actors) == 0:
		return codes.New(codes.Unavailable, "no service %q", c.To.Service)
	case len(actors) == 1:
		return actors[0].enqueue(c)
	case !c.To.HasKey:
		return codes.New(codes.Unavailable, "service %q has %d instances: address it as {service = %q, key = ...}", c.To.Service, len(actors), c.To.Service)
	}
	return actors[Shard(c.To.Key, len(actors))].enqueue(c)
}

// Return delivers a result to its VM's control lane.
func (rt *Runtime) Return(r *luavm.Result) {
	if a := rt.actor(r.To); a != nil {
		a.control.push(r)
	}
}

// Deliver puts a client frame on its target's business lane.
func (rt *Runtime) Deliver(target egress.ActorID, in *ingress.ClientIngress) *codes.Error {
	a := rt.actor(target)
	if a == nil {
		return codes.New(codes.Unavailable, "no service %s instance %d", target.Service, target.Instance)
	}
	return a.enqueue(in)
}

// Control puts a session lifecycle message on its target's control lane
// (ingress.Bound, Suspended, Resumed, Disconnected). It is never dropped.
func (rt *Runtime) Control(target egress.ActorID, m any) {
	if a := rt.actor(target); a != nil {
		a.control.push(m)
	}
}
