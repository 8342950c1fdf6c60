package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/testutil"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name        string
		floor       uint64
		base        int
		live, roots uint64
		want        int
	}{
		{"small heap: the heap minimum scaled to the floor", 64 * mib, 100, 2 * mib, 0, 1600},
		{"another floor", 32 * mib, 100, 1 * mib, 0, 800},
		{"live heap near the floor: by the live heap", 64 * mib, 100, 20 * mib, 0, 220},
		{"roots count as the pacer counts them", 64 * mib, 100, 20 * mib, 20 * mib, 110},
		{"half the floor live: the base already reaches it", 64 * mib, 100, 32 * mib, 0, 100},
		{"more than the floor live", 64 * mib, 100, 100 * mib, 0, 100},
		{"just under: a little above the base, rounded up", 64 * mib, 100, 31 * mib, 0, 107},
		{"another base", 64 * mib, 50, 40 * mib, 0, 60},
		{"another base, reached", 64 * mib, 200, 22 * mib, 0, 200},
		{"a huge floor is capped", 1 << 40, 100, 1 * mib, 0, maxPercent},
		{"nothing read yet", 64 * mib, 100, 0, 0, 1600},
	} {
		if got := Percent(c.floor, c.base, c.live, c.roots); got != c.want {
			t.Errorf("%s: Percent(%d MiB, %d, %d, %d) = %d, want %d", c.name, c.floor/mib, c.base, c.live, c.roots, got, c.want)
		}
	}
}

// read returns one runtime metric.
func read(name string) uint64 { return testutil.RuntimeMetric(name) }

// collectUntil runs collections (each runs the floor's cleanup soon after)
// until ok holds, for at most 5 s.
func collectUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s of collections: %s", what)
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFloor raises GOGC while the live heap is small, gives it back to the
// base when the live heap alone reaches the floor, and restores it on Stop.
// GOGC is process-wide, so this test is not parallel and puts it back.
func TestFloor(t *testing.T) {
	old := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64) // the environment's would bound the floor
	t.Cleanup(func() { debug.SetGCPercent(old); debug.SetMemoryLimit(oldLimit) })
	const floor = 16 << 20
	f := Start(floor, 100)
	t.Cleanup(f.Stop)

	collectUntil(t, "GOGC never went above 100", func() bool { return f.Percent() > 100 })
	// Another collection may run the cleanup between the two reads: poll.
	collectUntil(t, "the runtime's GOGC is not the one the floor set", func() bool {
		return read("/gc/gogc:percent") == uint64(f.Percent())
	})
	runtime.GC() // a goal under the new GOGC
	if goal := read("/gc/heap/goal:bytes"); goal < floor*9/10 || goal > floor*5/4 {
		t.Errorf("heap goal %d MiB with the floor at %d MiB (GOGC %d), want about the floor", goal>>20, floor>>20, f.Percent())
	}

	// 12 MiB live: the base's goal (24 MiB) is past the floor.
	live := make([]byte, 12<<20)
	collectUntil(t, "GOGC stayed raised with the live heap past half the floor", func() bool { return f.Percent() == 100 })
	runtime.KeepAlive(live)
	live = nil

	collectUntil(t, "GOGC was not raised again once the heap was freed", func() bool { return f.Percent() > 100 })
	f.Stop()
	if got := read("/gc/gogc:percent"); got != 100 {
		t.Errorf("after Stop GOGC is %d, want the base 100", got)
	}
	// Stopped: collections change nothing any more.
	for range 3 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if got := read("/gc/gogc:percent"); got != 100 {
		t.Errorf("collections after Stop set GOGC to %d", got)
	}
	f.Stop() // a second Stop is harmless
}

// TestMemoryLimitBoundsTheFloor: with GOMEMLIMIT at 32 MiB the floor is
// 8 MiB at most, and so is the goal it sets.
func TestMemoryLimitBoundsTheFloor(t *testing.T) {
	old := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(32 << 20)
	t.Cleanup(func() { debug.SetGCPercent(old); debug.SetMemoryLimit(oldLimit) })
	f := Start(64<<20, 100)
	defer f.Stop()
	if f.floor != 8<<20 {
		t.Errorf("floor %d MiB under a 32 MiB memory limit, want 8", f.floor>>20)
	}
	collectUntil(t, "GOGC never went above 100", func() bool { return f.Percent() > 100 })
	runtime.GC()
	if goal := read("/gc/heap/goal:bytes"); goal > 10<<20 {
		t.Errorf("heap goal %d MiB under a 32 MiB memory limit (GOGC %d), want about 8", goal>>20, f.Percent())
	}
}
