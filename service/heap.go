package service

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// watchHeap stops running handlers while the Go heap is above
// lua.heap_limit_bytes (SPEC §6): the string library and the table
// patches cap what one call builds, but a loop that grows a table or
// concatenates can still eat the process. What it measures is the whole
// process's live heap (the Go runtime's /memory/classes/heap/objects):
// every VM's Lua values, and the gateway's own buffers and queues, which
// are bounded per session so that they cannot reach it on their own.
//
// It stops runs; it never replaces a VM (only a Go panic does), so a VM's
// state survives. And it fires on growth, not on a level: after it
// stopped what was running, it fires again only once the heap has grown
// by another tenth of the limit, or fallen below the limit and passed it
// again. Memory that no handler is growing (a big but stable state, the
// connections' buffers) therefore costs one round of stopped handlers,
// not one every tick.
//
// The heap counts garbage until a collection frees it, and right after a
// runaway handler is stopped its table is exactly that: so while the heap
// is within the collector's goal for the cycle, a reading above the limit
// is confirmed by a forced collection (at most one per gcEvery) before
// anything is stopped. A heap past the goal is growing faster than the
// collector keeps up with, which is what a runaway handler does: it is
// stopped at once.
func (rt *Runtime) watchHeap() {
	defer close(rt.watchDone)
	if rt.opts.HeapLimitBytes <= 0 {
		<-rt.watchStop
		return
	}
	const gcEvery = 100 * time.Millisecond
	limit := uint64(rt.opts.HeapLimitBytes)
	step := max(limit/10, 1)
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
	var fired uint64 // the heap when the watch last stopped runs; 0: not since it was below the limit
	for {
		select {
		case <-rt.watchStop:
			return
		case <-tick.C:
		}
		heap, goal := read()
		if heap < limit {
			fired = 0
			continue
		}
		if fired != 0 && heap < fired+step {
			continue // the same memory as last time: nothing is growing it
		}
		if heap <= goal {
			if time.Since(lastGC) < gcEvery {
				continue
			}
			runtime.GC()
			lastGC = time.Now()
			if heap, _ = read(); heap < limit {
				fired = 0
				continue
			}
		}
		fired = heap
		rt.each(func(a *actor) {
			if a.vm.Load().InterruptHeap() {
				rt.log.Warn("heap limit passed: running handler stopped", "service", a.id.Service, "instance", a.id.Instance,
					"heap_bytes", heap, "limit", limit)
			}
		})
		rt.metrics.HeapLimitHit()
	}
}
