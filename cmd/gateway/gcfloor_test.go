package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gogc is the GOGC in force.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestGCFloorUnlessGOGC: `gateway run` raises GOGC while the heap is small,
// and leaves it alone when the environment sets GOGC, even to 100. GOGC
// is process-wide: not parallel, and put back.
func TestGCFloorUnlessGOGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return v
			}
			return ""
		}
	}

	stop := startGCFloor(env("100"))
	for range 3 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if got := gogc(); got != 100 {
		t.Errorf("with GOGC=100 in the environment GOGC became %d", got)
	}
	stop()

	stop = startGCFloor(env(""))
	deadline := time.Now().Add(5 * time.Second)
	for gogc() <= 100 {
		if time.Now().After(deadline) {
			t.Fatal("without GOGC in the environment the floor never raised it")
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if got := gogc(); got != 100 {
		t.Errorf("GOGC %d after the floor stopped, want 100", got)
	}
}
