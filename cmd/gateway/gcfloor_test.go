package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/testutil"
)

// gogc is the GOGC in force.
func gogc() uint64 { return testutil.RuntimeMetric("/gc/gogc:percent") }

// TestGCFloorUnlessGOGC: `gateway run` raises GOGC while the heap is small,
// and leaves it alone when the environment sets GOGC, even to 100; the
// floor stays under half of lua.heap_limit_bytes. GOGC and the memory limit
// are process-wide: not parallel, and put back.
func TestGCFloorUnlessGOGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(old); debug.SetMemoryLimit(oldLimit) })
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}

	stop := startGCFloor(env("100"), 2<<30)
	for range 3 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if got := gogc(); got != 100 {
		t.Errorf("with GOGC=100 in the environment GOGC became %d", got)
	}
	stop()

	for _, c := range []struct {
		heapLimit int64
		max       uint64 // the GOGC the floor may set at most: floor / 4 MiB
	}{
		{2 << 30, 800},  // the default limit: the 32 MiB floor
		{16 << 20, 200}, // half of 16 MiB: an 8 MiB floor
	} {
		stop = startGCFloor(env(""), c.heapLimit)
		deadline := time.Now().Add(5 * time.Second)
		for gogc() <= 100 {
			if time.Now().After(deadline) {
				t.Fatalf("heap limit %d MiB: without GOGC in the environment the floor never raised it", c.heapLimit>>20)
			}
			runtime.GC()
			time.Sleep(5 * time.Millisecond)
		}
		if got := gogc(); got > c.max {
			t.Errorf("heap limit %d MiB: GOGC %d, want at most %d", c.heapLimit>>20, got, c.max)
		}
		stop()
		if got := gogc(); got != 100 {
			t.Errorf("GOGC %d after the floor stopped, want 100", got)
		}
	}
}
