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
// process's live heap: every VM's Lua values, and the gateway's own
// buffers and queues, which are bounded per session so that they cannot
// reach it on their own.
//
// It stops runs; it never replaces a VM (only a Go panic does), so a VM's
// state survives. And it fires on growth, not on a level: after it
// stopped what was running, it fires again only once the live heap has
// grown by another tenth of the limit, or fallen below the limit and
// passed it again. Memory that no handler is growing (a big but stable
// state, the connections' buffers) therefore costs one round of stopped
// handlers, not one every tick, however much garbage ordinary handlers
// make beside it.
//
// The heap counts garbage until a collection frees it, and right after a
// runaway handler is stopped its table is exactly that: so a reading above
// the limit is confirmed by a forced collection (at most one per gcEvery)
// before anything is stopped, and judged by what was live before the
// collection and still is. What the collection marked is not that: it
// counts as live everything allocated while it ran, which on a busy
// gateway is megabytes of bystanders' garbage, and judging by it (or by a
// heap just past the collector's goal, which garbage overshoots while a
// cycle runs) stopped bystanders again and again while the connections'
// buffers held the heap over the limit (issue 19). When only what came
// during the collection takes the heap over, a second collection decides:
// a table that grew meanwhile is old and live by then, bystanders' garbage
// is gone. One runaway is judged by its pace instead: a string doubling in
// a loop holds only what it allocated last, so it shows as the whole live
// heap (or more) allocated during the collection.
func (rt *Runtime) watchHeap() {
	defer close(rt.watchDone)
	if rt.opts.HeapLimitBytes <= 0 {
		<-rt.watchStop
		return
	}
	const gcEvery = 100 * time.Millisecond
	limit := uint64(rt.opts.HeapLimitBytes)
	step := max(limit/10, 1)
	// objects is the heap with its garbage, cheap to read every tick;
	// marked is what the last collection found live, which counts as live
	// everything allocated while it ran (a busy gateway's bystanders
	// allocate megabytes in a collection's time); allocs is every byte
	// ever allocated, to take those out again.
	objects := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	marked := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	read := func(s []metrics.Sample) uint64 {
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			return s[0].Value.Uint64()
		}
		return 0
	}
	// collect forces a collection and returns what it found live and what
	// was allocated while it ran.
	collect := func() (live, during uint64) {
		before := read(allocs)
		runtime.GC()
		return read(marked), read(allocs) - before
	}
	every := rt.opts.HeapCheckEvery
	tick := time.NewTimer(every)
	defer tick.Stop()
	var lastGC time.Time
	var fired uint64 // the live heap when the watch last stopped runs; 0: not since it was below the limit
	for {
		select {
		case <-rt.watchStop:
			return
		case <-tick.C:
		}
		heap := read(objects)
		tick.Reset(nextHeapCheck(heap, limit, every))
		if heap < limit {
			fired = 0
			continue
		}
		if fired != 0 && heap < fired+step {
			continue // the same memory as last time: nothing is growing it
		}
		if time.Since(lastGC) < gcEvery {
			continue
		}
		threshold := limit
		if fired != 0 {
			threshold = max(limit, fired+step)
		}
		live, during := collect()
		lastGC = time.Now()
		// What was live before the collection began and still is: a
		// runaway's table, or memory nobody grows; not what bystanders
		// allocated meanwhile.
		heap = live - min(live, during)
		if live >= threshold && heap < threshold && during < live {
			// Over it only with what came during the collection: a
			// second one tells a table that grew meanwhile (old now,
			// and still live) from bystanders' garbage (gone).
			live, during = collect()
			heap = live - min(live, during)
		}
		switch {
		case live < limit:
			fired = 0 // under the limit even counting what came meanwhile
			continue
		case during >= live:
			// As much as the whole live heap allocated in one
			// collection's time is no bystander's pace but a runaway's,
			// such as a string doubling in a loop: what it holds is what
			// it allocated last, which the estimate leaves out.
			heap = live
		case heap < threshold:
			// Under the limit, or not grown a tenth of it since the last
			// stop: garbage, or the memory the watch already stopped runs
			// for.
			continue
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

// An idle process still woke every HeapCheckEvery to read its heap, the
// most of its idle CPU (6 ms a second). Far below the limit the heap
// cannot reach it before a later reading, so the watch reads again after
// the time the headroom takes at heapWatchRate, between HeapCheckEvery
// and heapWatchMax.
const (
	heapWatchRate = 16 << 30 // bytes a second: above what the process's goroutines can allocate
	heapWatchMax  = 250 * time.Millisecond
)

// nextHeapCheck is how long the watch waits after reading heap.
func nextHeapCheck(heap, limit uint64, every time.Duration) time.Duration {
	if heap >= limit {
		return every
	}
	d := time.Duration(float64(limit-heap) / heapWatchRate * float64(time.Second))
	return min(max(d, every), max(heapWatchMax, every))
}
