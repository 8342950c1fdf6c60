package luavm

import (
	"sync"
	"testing"
	"time"
)

func chanClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestInterruptRules checks the interrupt's rules run by run: a budget
// fire before the deadline is ignored, a fire between runs does nothing,
// the first reason wins, and the run after a fired one starts clean.
func TestInterruptRules(t *testing.T) {
	in := newInterrupt()
	defer in.stop()
	later := time.Now().Add(time.Hour)

	in.arm(later)
	if in.fire(interruptBudget) {
		t.Fatal("a budget fire before the deadline stopped the run")
	}
	if r := in.disarm(); r != notInterrupted {
		t.Fatalf("disarm = %v, want not interrupted", r)
	}
	if in.fire(interruptHeap) {
		t.Fatal("a fire between runs stopped something")
	}

	in.arm(later)
	if !in.fire(interruptHeap) {
		t.Fatal("a heap fire did not stop the run")
	}
	if in.fire(interruptBudget) || !in.stopped.Load() || in.Err() == nil {
		t.Fatal("a second fire won, or the stop is not visible to gopher-lua")
	}
	if r := in.disarm(); r != interruptHeap {
		t.Fatalf("disarm = %v, want the heap", r)
	}
	if in.stopped.Load() || chanClosed(in.Done()) || in.Err() != nil {
		t.Fatal("the run after a fired one does not start clean")
	}

	// Past its deadline, a run is stopped: by this fire, or by the timer
	// that arm set for it, whichever comes first.
	in.arm(time.Now().Add(-time.Millisecond))
	in.fire(interruptBudget)
	if !in.stopped.Load() {
		t.Fatal("a budget fire past the deadline did not stop the run")
	}
	if r := in.disarm(); r != interruptBudget {
		t.Fatalf("disarm = %v, want the budget", r)
	}
}

// TestInterruptTimer checks that the timer stops a run past its budget,
// also when it was set for an earlier, longer one.
func TestInterruptTimer(t *testing.T) {
	in := newInterrupt()
	defer in.stop()
	in.arm(time.Now().Add(time.Hour))
	in.disarm()
	in.arm(time.Now().Add(20 * time.Millisecond))
	select {
	case <-in.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the timer did not stop the run")
	}
	if r := in.disarm(); r != interruptBudget {
		t.Fatalf("disarm = %v, want the budget", r)
	}
}

// TestInterruptFireRacesDisarm fires from another goroutine while runs
// come and go: whatever the interleaving, a disarmed VM is clean, so no
// fire meant for one run stops the next.
func TestInterruptFireRacesDisarm(t *testing.T) {
	in := newInterrupt()
	defer in.stop()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				in.fire(interruptHeap)
			}
		}
	}()
	fired := 0
	later := time.Now().Add(time.Hour)
	for range 20000 {
		in.arm(later)
		if in.disarm() == interruptHeap {
			fired++
		}
		if in.stopped.Load() || chanClosed(in.Done()) {
			close(stop)
			wg.Wait()
			t.Fatal("a disarmed run is left stopped")
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d of 20000 runs fired", fired)
}
