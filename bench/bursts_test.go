package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestBursts checks the two shapes Bursts tells apart, on 100 windows of
// 10 answers each: slow answers spread over the run, and slow answers
// packed into a few windows, as a stall leaves them.
func TestBursts(t *testing.T) {
	const tail = 3 * time.Millisecond
	for _, tc := range []struct {
		name    string
		slowAt  func(win, k int) bool // whether the answer to the k-th request of window win is slow
		slow    uint64
		top     float64 // TopShare
		windows int     // SlowWindows
	}{
		{name: "none", slowAt: func(int, int) bool { return false }},
		// One slow answer in every window: the worst 5 hold 5 of 100.
		{name: "spread", slowAt: func(_, k int) bool { return k == 0 }, slow: 100, top: 0.05, windows: 100},
		// Every answer of windows 40 to 41 and 70 to 72: all in the
		// worst 5.
		{name: "bursts", slowAt: func(win, _ int) bool { return win == 40 || win == 41 || win >= 70 && win <= 72 }, slow: 50,
			top: 1, windows: 5},
		// Ten windows of bursts: the worst 5 hold half.
		{name: "longer bursts", slowAt: func(win, _ int) bool { return win/10 == 4 }, slow: 100, top: 0.5, windows: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindows(tail, 100*window)
			for win := range 100 {
				for k := range 10 {
					took := tail // not slower than tail
					if tc.slowAt(win, k) {
						took = tail + time.Microsecond
					}
					w.record(time.Duration(win)*window+time.Duration(k)*window/10, took)
				}
			}
			b := w.bursts(100)
			if b.Answers != 1000 || b.Slow != tc.slow || b.Windows != 100 || b.Tail != tail {
				t.Fatalf("counted %+v", b)
			}
			if math.Abs(b.TopShare-tc.top) > 1e-9 || b.SlowWindows != tc.windows {
				t.Errorf("TopShare %v, SlowWindows %d; want %v, %d", b.TopShare, b.SlowWindows, tc.top, tc.windows)
			}
		})
	}
}

// TestRunBursts checks that a run with Options.Tail counts every answer it
// measured into its windows.
func TestRunBursts(t *testing.T) {
	r := runEcho(t, Options{Tail: time.Hour})
	b := r.Bursts
	if b == nil || b.Answers != r.Requests || b.Slow != 0 || b.Windows < 200 || b.Windows > 400 {
		t.Fatalf("bursts %+v of %d requests", b, r.Requests)
	}
	if !strings.Contains(b.String(), "slower than 1h0m0s: none of") {
		t.Fatalf("line %q", b.String())
	}
}
