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
	"runtime"
	"runtime/metrics"
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
}

type noMetrics struct{}

func (noMetrics) VMRestarted(string) {}

// Options tune a Runtime.
type Options struct {
	Logger  *slog.Logger   // nil: slog.Default()
	Gateway egress.Gateway // may also be set later with SetGateway
	Metrics Metrics        // nil: nothing is counted
	// HeapLimitBytes is lua.heap_limit_bytes: above it, running handlers
	// are stopped with resource_exhausted and their VMs replaced. 0: no watch.
	HeapLimitBytes int64
	// HeapCheckEvery is how often the heap is read; 0: 20ms.
	HeapCheckEvery time.Duration
}

// Runtime is every running service of one node.
type Runtime struct {
	log      *slog.Logger
	metrics  Metrics
	opts     Options
	gw       atomic.Pointer[egress.Gateway]
	services map[string][]*Actor // by service name, indexed by instance

	stopOnce  sync.Once
	watchStop chan struct{}
	watchDone chan struct{}
}

// New wraps compiled VMs (from bootstrap) in actors; nothing runs until
// Start. cfg gives each actor's mailbox.
func New(cfg *config.Config, vms map[string][]*luavm.VM, opts Options) *Runtime {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	if opts.HeapCheckEvery <= 0 {
		opts.HeapCheckEvery = 20 * time.Millisecond
	}
	rt := &Runtime{log: opts.Logger, metrics: opts.Metrics, opts: opts, services: map[string][]*Actor{}}
	if opts.Gateway != nil {
		rt.SetGateway(opts.Gateway)
	}
	for _, a := range cfg.Actors {
		for _, vm := range vms[a.Name] {
			rt.services[a.Name] = append(rt.services[a.Name], newActor(rt, vm, a.Mailbox))
		}
	}
	return rt
}

// SetGateway attaches the gateway that answers, pushes and binds go to.
func (rt *Runtime) SetGateway(gw egress.Gateway) { rt.gw.Store(&gw) }

// Gateway returns the attached gateway, or nil.
func (rt *Runtime) Gateway() egress.Gateway {
	if p := rt.gw.Load(); p != nil {
		return *p
	}
	return nil
}

func (rt *Runtime) respond(r *egress.Response) {
	if gw := rt.Gateway(); gw != nil {
		gw.Respond(r)
	}
}

// Start runs every actor and every VM's init, and returns when all inits
// have finished; an init that fails fails the start (the runtime is then
// stopped, and a later Stop does nothing). ctx bounds the wait.
func (rt *Runtime) Start(ctx context.Context) error {
	for _, actors := range rt.services {
		for _, a := range actors {
			go a.loop()
		}
	}
	rt.watchStop, rt.watchDone = make(chan struct{}), make(chan struct{})
	go rt.watchHeap()
	if err := rt.hook(ctx, "init"); err != nil {
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
		err = rt.hook(ctx, "stop")
		rt.halt()
	})
	return err
}

// halt ends every actor and the heap watcher. It runs once, under stopOnce.
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
}

// hook runs init or stop in every VM at once and collects the failures.
func (rt *Runtime) hook(ctx context.Context, name string) error {
	var n int
	done := make(chan error, rt.count())
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

func (rt *Runtime) count() int {
	n := 0
	for _, actors := range rt.services {
		n += len(actors)
	}
	return n
}

// Instances returns the number of VMs of a service, 0 when there is none.
func (rt *Runtime) Instances(service string) int { return len(rt.services[service]) }

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

func (rt *Runtime) actor(id egress.ActorID) *Actor {
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
	n := rt.Instances(service)
	if n == 0 {
		return egress.ActorID{}, codes.New(codes.Unavailable, "no service %q", service)
	}
	return egress.ActorID{Service: service, Instance: Shard(key, n)}, nil
}

// Entry is a new session's first target on a listener whose entry_service
// is service: the VM session_id % instances (SPEC §4).
func (rt *Runtime) Entry(service string, sessionID uint64) (egress.ActorID, *codes.Error) {
	n := rt.Instances(service)
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

// Return delivers a call's result to the caller's control lane.
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

// Disconnect tells a session's target that the session closed. It is never
// dropped.
func (rt *Runtime) Disconnect(target egress.ActorID, d *ingress.Disconnected) {
	if a := rt.actor(target); a != nil {
		a.control.push(d)
	}
}

// watchHeap stops running handlers while the Go heap is above the limit:
// the string library caps what one call builds, but a loop that grows a
// table or concatenates can still eat the process.
//
// The heap counts garbage until a collection frees it, and right after a
// runaway handler is stopped its table is exactly that: left alone, the
// heap would stay above the limit until the next cycle, and every handler
// that ran meanwhile would be stopped for nothing. So while the heap is
// within the collector's goal for the cycle (what is above the limit may be
// garbage), a reading above the limit is confirmed by a forced collection
// (at most one per gcEvery) before anything is stopped. A heap past the
// goal is growing faster than the collector can keep up with, which is
// what a runaway handler does: it is stopped at once, without waiting for
// a collection while it allocates on.
func (rt *Runtime) watchHeap() {
	defer close(rt.watchDone)
	if rt.opts.HeapLimitBytes <= 0 {
		<-rt.watchStop
		return
	}
	const gcEvery = 100 * time.Millisecond
	limit := uint64(rt.opts.HeapLimitBytes)
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	read := func() (heap, goal uint64) {
		metrics.Read(samples)
		if samples[0].Value.Kind() == metrics.KindUint64 {
			heap = samples[0].Value.Uint64()
		}
		goal = ^uint64(0)
		if samples[1].Value.Kind() == metrics.KindUint64 {
			goal = samples[1].Value.Uint64()
		}
		return heap, goal
	}
	tick := time.NewTicker(rt.opts.HeapCheckEvery)
	defer tick.Stop()
	var lastGC time.Time
	for {
		select {
		case <-rt.watchStop:
			return
		case <-tick.C:
		}
		heap, goal := read()
		if heap < limit {
			continue
		}
		if heap <= goal {
			if time.Since(lastGC) < gcEvery {
				continue
			}
			runtime.GC()
			lastGC = time.Now()
			if heap, _ = read(); heap < limit {
				continue
			}
		}
		for _, actors := range rt.services {
			for _, a := range actors {
				if a.vm.Load().InterruptHeap() {
					rt.log.Warn("heap limit passed: handler stopped", "service", a.id.Service, "instance", a.id.Instance,
						"heap_bytes", heap, "limit", limit)
				}
			}
		}
	}
}
