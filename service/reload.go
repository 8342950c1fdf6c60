package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/luavm"
)

// Change is a reload's work for one actor (SPEC §12): its new limits and
// schemas, which take effect at once, and, when its code, routes or
// settings changed, its new VMs, compiled and not started.
type Change struct {
	Service        string
	Mailbox        int
	HandlerTimeout time.Duration
	MaxPending     int
	// Schemas validate the requests of the VMs kept (new VMs carry their
	// own in their spec).
	Schemas *codec.Schemas
	// VMs are the actor's new VMs by instance (nil at an instance hosted
	// on another node), or nil to keep its VMs.
	VMs []*luavm.VM
	// Kind is a room kind's new spec and room block, from which the rooms
	// made after the reload are made (docs/rooms.md §2.5); VMs then holds
	// its compile of layer 3. Nil for every other actor.
	Kind *Actor
}

// Generation is the code version a service runs: 1 at start, one more for
// each reload that replaced its VMs.
func (rt *Runtime) Generation(service string) int { return rt.gens[service] }

// Reload applies changes, one actor after another. An actor's limits
// change at once. An actor with new VMs is swapped: each of its instances
// stops taking messages (they wait in its mailbox), runs the old module's
// reload_save and starts the new VM with reload_load (when both exist) or
// init; if every instance succeeded, the new VMs take the mailboxes and the
// old ones finish their runs and close; if one failed, the actor keeps its
// old VMs, which take messages again, and its error is returned. It
// returns the actors swapped, and the errors of those that kept their old
// VMs. Every new VM given is either the actor's afterwards or closed.
// Reloads must not run concurrently (the caller serialises them).
func (rt *Runtime) Reload(ctx context.Context, changes []Change) (swapped []string, err error) {
	var errs []error
	for _, c := range changes {
		if k := rt.rooms.kinds[c.Service]; k != nil {
			if rt.reloadKind(k, c) {
				rt.gens[c.Service]++
				rt.metrics.VMGeneration(c.Service, rt.gens[c.Service])
				swapped = append(swapped, c.Service)
			}
			continue
		}
		actors := rt.services[c.Service]
		if len(actors) == 0 || (c.VMs != nil && !sameHosts(actors, c.VMs)) {
			for _, vm := range c.VMs {
				if vm != nil {
					vm.Close()
				}
			}
			errs = append(errs, fmt.Errorf("reload: service %s: new VMs do not match its instances", c.Service))
			continue
		}
		rt.setLimits(actors, c)
		if c.VMs == nil {
			continue
		}
		if err := rt.swap(ctx, actors, c.VMs); err != nil {
			errs = append(errs, fmt.Errorf("reload: service %s kept its old VMs: %w", c.Service, err))
			continue
		}
		rt.gens[c.Service]++
		rt.metrics.VMGeneration(c.Service, rt.gens[c.Service])
		swapped = append(swapped, c.Service)
	}
	return swapped, errors.Join(errs...)
}

// sameHosts reports whether vms has a VM exactly at the instances this
// node hosts.
func sameHosts(actors []*actor, vms []*luavm.VM) bool {
	if len(vms) != len(actors) {
		return false
	}
	for i, a := range actors {
		if (a == nil) != (vms[i] == nil) {
			return false
		}
	}
	return true
}

// hosted is the number of instances of actors this node runs.
func hosted(actors []*actor) int {
	n := 0
	for _, a := range actors {
		if a != nil {
			n++
		}
	}
	return n
}

// setLimits gives every instance of an actor its new limits, and the kept
// VMs their new schemas.
func (rt *Runtime) setLimits(actors []*actor, c Change) {
	done := make(chan struct{}, len(actors))
	for _, a := range actors {
		if a != nil {
			a.control.push(setLimits{mailbox: c.Mailbox, maxPending: c.MaxPending, handlerTimeout: int64(c.HandlerTimeout),
				schemas: c.Schemas, keep: c.VMs == nil, done: done})
		}
	}
	for range hosted(actors) {
		<-done
	}
}

// swap prepares every instance's new VM at once, then commits all of them
// or, when one failed (or ctx ended), aborts all.
func (rt *Runtime) swap(ctx context.Context, actors []*actor, next []*luavm.VM) error {
	n := hosted(actors)
	prepared := make(chan error, n)
	for i, a := range actors {
		if a != nil {
			a.control.push(prepareSwap{next: next[i], done: prepared})
		}
	}
	var errs []error
	for range n {
		select {
		case err := <-prepared:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
		}
		if ctx.Err() != nil {
			break
		}
	}
	done := make(chan struct{}, n)
	for _, a := range actors {
		switch {
		case a == nil:
		case len(errs) == 0:
			a.control.push(commitSwap{done: done})
		default:
			a.control.push(abortSwap{done: done})
		}
	}
	for range n {
		<-done
	}
	return errors.Join(errs...)
}
