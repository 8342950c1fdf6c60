// Package gcfloor keeps the Go collector's heap goal from falling below a
// floor, the way a server with a small live heap wants it: the gateway's
// live heap is a few MiB, every request makes a little garbage, and Go's
// GOGC=100 sets the next collection at twice the live heap (at least
// 4 MiB), so under load it collected about 60 times a second, and a tenth
// to a fifth of the CPU went to allocation and marking (BENCHMARKS.md, "The
// fourth round"). Raising GOGC for good would let a large live heap (many
// sessions) carry several times its size in garbage; the floor only raises
// it while twice the live heap is below the floor, so a process whose live
// heap is over half the floor collects as at GOGC=100.
//
// After every collection the floor reads what the collection found live
// and sets GOGC so that the next goal is the floor (or the base GOGC's goal,
// whichever is larger). It runs in a cleanup attached to an object made
// for each cycle, so an idle process (no collections) does nothing. The
// cleanup runs once the collection's sweep is done, and SetGCPercent
// revises the goal at once from what that collection found live; until
// then the goal is the raised GOGC's, so a live heap that jumped (a mass
// login) may grow past twice its size in that window (usually
// milliseconds; a GOMEMLIMIT bounds it). It is process-wide: only a
// process's main starts it.
package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent bounds GOGC whatever the floor: past a collection every few
// hundred MiB of garbage nothing is gained.
const maxPercent = 10000

// Floor is a started floor; Stop ends it.
type Floor struct {
	floor uint64
	base  int // the GOGC to return to

	mu      sync.Mutex // guards stopped, percent; held while setting GOGC
	stopped bool
	percent int // the GOGC last set

	samples []metrics.Sample // only the cleanup (one at a time) reads them
}

// sentinel is made once per cycle and dropped at once: its cleanup runs
// after the collection that finds it unreachable. It holds a pointer so
// that it is never one of the tiny allocations, whose cleanups wait for
// their neighbours.
type sentinel struct {
	_ *int
	_ [2]uint64
}

// Start keeps the heap goal at floor bytes or more, from the next
// collection on, with base (>= 0) as the GOGC when the live heap is large
// (the caller passes what it runs with: 100 unless GOGC says otherwise).
// A memory limit (GOMEMLIMIT) still applies, and the one in force at Start
// bounds the floor to a quarter of it.
func Start(floor uint64, base int) *Floor {
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 && uint64(limit)/4 < floor {
		floor = uint64(limit) / 4
	}
	f := &Floor{
		floor:   floor,
		base:    base,
		percent: base,
		samples: []metrics.Sample{
			{Name: "/gc/heap/live:bytes"},
			{Name: "/gc/scan/stack:bytes"},
			{Name: "/gc/scan/globals:bytes"},
		},
	}
	f.arm()
	return f
}

// Stop ends the floor and sets GOGC back to the base.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	if f.percent != f.base {
		debug.SetGCPercent(f.base)
		f.percent = f.base
	}
}

// Percent is the GOGC the floor set last.
func (f *Floor) Percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.percent
}

func (f *Floor) arm() {
	runtime.AddCleanup(new(sentinel), (*Floor).cycle, f)
}

// cycle runs after a collection: it sets the GOGC that puts the next goal
// at the floor, and arms itself for the next one.
func (f *Floor) cycle() {
	metrics.Read(f.samples)
	live, stacks, globals := f.samples[0].Value.Uint64(), f.samples[1].Value.Uint64(), f.samples[2].Value.Uint64()
	p := Percent(f.floor, f.base, live, stacks+globals)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	// A change under a twentieth is not worth the heap lock SetGCPercent
	// takes; the goal moves less than the live heap does between cycles.
	if d := p - f.percent; d*20 > f.percent || -d*20 > f.percent || (p == f.base) != (f.percent == f.base) {
		debug.SetGCPercent(p)
		f.percent = p
	}
	f.arm()
}

// heapMinimum is the runtime's smallest heap goal at GOGC=100
// (defaultHeapMinimum in runtime/mgcpacer.go), which it scales by GOGC/100.
// A runtime built with GOEXPERIMENT=heapminimum512kib has 512 KiB, and
// the floor then falls short while the live heap is small (TestFloor would
// fail: its goal is checked against the floor).
const heapMinimum = 4 << 20

// Percent is the smallest GOGC, not under base (>= 0) and at most
// maxPercent, that puts the heap goal at floor or past it. Go's pacer sets
// the goal at the larger of live + (live + roots) * GOGC / 100 and
// heapMinimum * GOGC / 100, so either reaching the floor is enough.
func Percent(floor uint64, base int, live, roots uint64) int {
	p := ceilDiv(floor*100, heapMinimum)
	if scan := live + roots; scan > 0 {
		if live >= floor {
			return base
		}
		p = min(p, ceilDiv((floor-live)*100, scan))
	}
	return max(int(min(p, maxPercent)), base)
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }
