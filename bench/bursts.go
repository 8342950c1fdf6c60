package bench

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// A closed loop's tail latency has two different causes, and p99 alone
// does not say which: answers slow now and then, spread evenly over the
// run (a queue that serves some sessions late, every time), or answers
// slow all at once, in bursts (the whole server, or the generator, or the
// machine, stopped for a few milliseconds: a collection, the kernel
// running another process on the CPU). Bursts tells them apart: with
// Options.Tail set, every connection counts, per millisecond of the
// measured time, the answers to the requests it sent in it and those of
// them slower than Tail. A stall makes every request sent just before it
// slow, whichever session sent it; the answers read after it mix the
// stalled requests with new ones, so the windows are by send time.

// window is one millisecond of the measured time.
const window = time.Millisecond

// topWindows is the share of the windows that TopShare looks at: the 5%
// holding the most slow answers. Spread evenly, they hold about 5% of
// them; in bursts, nearly all. (When more than 5% of the answers are
// slow, not even bursts fit in 5% of the windows: a Tail near the p99
// says most.)
const topWindows = 0.05

// Bursts is how the answers slower than a threshold spread over the
// measured time.
type Bursts struct {
	Tail    time.Duration // the threshold, Options.Tail
	Answers uint64        // answers read while measuring, Result.Requests
	Slow    uint64        // of them, slower than Tail
	Windows int           // milliseconds of the measured time
	// TopShare is the share of the slow answers whose requests were sent
	// in the 5% of the windows that hold most of them.
	TopShare float64
	// SlowWindows is how many windows hold any slow answer.
	SlowWindows int
}

// String is one line for a report.
func (b *Bursts) String() string {
	if b.Slow == 0 {
		return fmt.Sprintf("slower than %v: none of %d answers", b.Tail, b.Answers)
	}
	return fmt.Sprintf("slower than %v: %.2f%% of answers, %.0f%% of them sent in the worst 5%% of the %d ms (any in %d ms)",
		b.Tail, 100*float64(b.Slow)/float64(b.Answers), 100*b.TopShare, b.Windows, b.SlowWindows)
}

// windows is one connection's count of answers, and of slow ones, per
// window of the measured time; a Run's total is every connection's
// merged.
type windows struct {
	tail      time.Duration
	all, slow []uint32
}

// newWindows makes the windows of a measured time of Duration measured,
// and of the second after it: the measured time ends a little after
// Duration, and a late answer lands in the last window.
func newWindows(tail, measured time.Duration) *windows {
	n := int((measured+time.Second)/window) + 1
	return &windows{tail: tail, all: make([]uint32, n), slow: make([]uint32, n)}
}

// record counts the answer to a request sent at since (after the measured
// time began; one sent before is counted in the first window) that took
// took.
func (w *windows) record(since, took time.Duration) {
	i := min(max(int(since/window), 0), len(w.all)-1)
	w.all[i]++
	if took > w.tail {
		w.slow[i]++
	}
}

func (w *windows) merge(o *windows) {
	for i := range w.all {
		w.all[i] += o.all[i]
		w.slow[i] += o.slow[i]
	}
}

// bursts sums w up over its first n windows, the measured time's.
func (w *windows) bursts(n int) *Bursts {
	n = min(n, len(w.all))
	b := &Bursts{Tail: w.tail, Windows: n}
	for i := range n {
		b.Answers += uint64(w.all[i])
		b.Slow += uint64(w.slow[i])
		if w.slow[i] > 0 {
			b.SlowWindows++
		}
	}
	if b.Slow == 0 {
		return b
	}
	slow := slices.Clone(w.slow[:n])
	slices.SortFunc(slow, func(a, b uint32) int { return cmp.Compare(b, a) })
	var top uint64
	for _, c := range slow[:max(1, int(topWindows*float64(n)))] {
		top += uint64(c)
	}
	b.TopShare = float64(top) / float64(b.Slow)
	return b
}
