package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shieldrpc/shield/luavm"
)

// Change is a reload's work for one actor (SPEC §12): its new limits,
// which take effect at once, and, when its code, routes or settings
// changed, its new VMs, one per instance, compiled and not started.
type Change struct {
	Service        string
	Mailbox        int
	HandlerTimeout time.Duration
	MaxPending     int
	// VMs are the actor's new VMs by instance, or nil to keep its VMs.
	VMs []*luavm.VM
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
		actors := rt.services[c.Service]
		if len(actors) == 0 || (c.VMs != nil && len(c.VMs) != len(actors)) {
			for _, vm := range c.VMs {
				vm.Close()
			}
			errs = append(errs, fmt.Errorf("reload: service %s: %d VMs for %d instances", c.Service, len(c.VMs), len(actors)))
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

// setLimits gives every instance of an actor its new limits.
func (rt *Runtime) setLimits(actors []*actor, c Change) {
	done := make(chan struct{}, len(actors))
	for _, a := range actors {
		a.control.push(setLimits{mailbox: c.Mailbox, maxPending: c.MaxPending, handlerTimeout: int64(c.HandlerTimeout), done: done})
	}
	for range actors {
		<-done
	}
}

// swap prepares every instance's new VM at once, then commits all of them
// or, when one failed (or ctx ended), aborts all.
func (rt *Runtime) swap(ctx context.Context, actors []*actor, next []*luavm.VM) error {
	prepared := make(chan error, len(actors))
	for i, a := range actors {
		a.control.push(prepareSwap{next: next[i], done: prepared})
	}
	var errs []error
	for range actors {
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
	done := make(chan struct{}, len(actors))
	for _, a := range actors {
		if len(errs) == 0 {
			a.control.push(commitSwap{done: done})
		} else {
			a.control.push(abortSwap{done: done})
		}
	}
	for range actors {
		<-done
	}
	return errors.Join(errs...)
}
