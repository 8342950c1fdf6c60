package ingress_test

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/ingress"
)

// t0 starts on a whole second, so that the flood's per-second streak
// lines up with the offsets below.
var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

// takes runs Take at each time and returns the ok results.
func takes(b *ingress.Bucket, times ...time.Time) []bool {
	out := make([]bool, len(times))
	for i, now := range times {
		out[i], _ = b.Take(now)
	}
	return out
}

func TestBucketLimits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rate, burst int
		times       []time.Duration
		want        []bool
	}{
		{"burst then empty", 5, 5,
			[]time.Duration{0, 0, 0, 0, 0, 0, 0},
			[]bool{true, true, true, true, true, false, false}},
		{"refill one token per 1/rate", 5, 5,
			[]time.Duration{0, 0, 0, 0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond},
			[]bool{true, true, true, true, true, false, false, true, false}},
		{"refill stops at burst", 5, 2,
			[]time.Duration{0, 0, 0, 10 * time.Second, 10 * time.Second, 10 * time.Second},
			[]bool{true, true, false, true, true, false}},
		{"burst 0 counts as 1", 5, 0,
			[]time.Duration{0, 0, 200 * time.Millisecond},
			[]bool{true, false, true}},
		{"steady at the rate", 10, 1,
			[]time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 350 * time.Millisecond},
			[]bool{true, true, true, true, false}},
		{"no limit", 0, 0,
			[]time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			[]bool{true, true, true, true, true, true, true, true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ingress.NewBucket(tc.rate, tc.burst)
			times := make([]time.Time, len(tc.times))
			for i, d := range tc.times {
				times[i] = at(d)
			}
			got := takes(b, times...)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("take %d at +%v: ok=%v, want %v (all: %v)", i, tc.times[i], got[i], tc.want[i], got)
				}
			}
		})
	}
}

// flood sends a frame every 10ms from from to to (offsets from t0) and
// returns the offset of the first frame that reported a flood, or -1.
func flood(b *ingress.Bucket, from, to time.Duration) time.Duration {
	for d := from; d < to; d += 10 * time.Millisecond {
		if _, f := b.Take(at(d)); f {
			return d
		}
	}
	return -1
}

// TestBucketFlood: over the limit in each of ten whole seconds in a row is
// a flood; a second without a frame over the limit starts the count again.
// The seconds count from the streak's first frame over the limit. With 5/s
// and a burst of 5, frames every 10ms go over the limit from the sixth,
// at 50ms.
func TestBucketFlood(t *testing.T) {
	const firstOver = 50 * time.Millisecond
	t.Run("ten seconds in a row", func(t *testing.T) {
		got := flood(ingress.NewBucket(5, 5), 0, 15*time.Second)
		if got < firstOver+10*time.Second || got > firstOver+10*time.Second+50*time.Millisecond {
			t.Fatalf("flood at +%v, want ten seconds after the first frame over the limit (+%v)", got, firstOver)
		}
	})
	t.Run("not a wall-clock sliver", func(t *testing.T) {
		// A streak starting 10ms before a wall-clock second still needs
		// ten whole seconds.
		b := ingress.NewBucket(5, 5)
		start := 990*time.Millisecond - firstOver
		if got := flood(b, start, start+10*time.Second-20*time.Millisecond); got >= 0 {
			t.Fatalf("flood at +%v, %v after the streak began", got, got-start-firstOver)
		}
	})
	t.Run("a quiet second resets the streak", func(t *testing.T) {
		b := ingress.NewBucket(5, 5)
		if got := flood(b, 0, 8500*time.Millisecond); got >= 0 {
			t.Fatalf("flood at +%v", got)
		}
		// Silent from 8.5s to 10.1s: the streak's tenth second (9.05s to
		// 10.05s) has no frame over the limit.
		if got := flood(b, 10100*time.Millisecond, 19*time.Second); got >= 0 {
			t.Fatalf("flood at +%v, though a second in the streak was quiet", got)
		}
		if got := flood(b, 19*time.Second, 25*time.Second); got < 20*time.Second || got > 20500*time.Millisecond {
			t.Fatalf("flood at +%v, want ten seconds after the new streak began (about +20.15s)", got)
		}
	})
	t.Run("a second within the limit resets the streak", func(t *testing.T) {
		b := ingress.NewBucket(5, 5)
		if got := flood(b, 0, 8500*time.Millisecond); got >= 0 {
			t.Fatalf("flood at +%v", got)
		}
		for _, d := range []time.Duration{9200, 9500, 9800} {
			if ok, f := b.Take(at(d * time.Millisecond)); !ok || f {
				t.Fatalf("a frame within the limit at +%vms: ok=%v flood=%v", d, ok, f)
			}
		}
		if got := flood(b, 10100*time.Millisecond, 19*time.Second); got >= 0 {
			t.Fatalf("flood at +%v", got)
		}
	})
	t.Run("a frame within the limit is never a flood", func(t *testing.T) {
		b := ingress.NewBucket(5, 5)
		if flood(b, 0, 11*time.Second) < 0 {
			t.Fatal("no flood")
		}
		if ok, f := b.Take(at(15 * time.Second)); !ok || f {
			t.Fatalf("ok=%v flood=%v", ok, f)
		}
	})
	t.Run("nil bucket", func(t *testing.T) {
		var b *ingress.Bucket
		if ok, f := b.Take(t0); !ok || f {
			t.Fatalf("nil bucket: ok=%v flood=%v", ok, f)
		}
	})
}

// TestBucketWait: the retry hint of a refused frame is the time until the
// bucket holds a whole token, and a bucket with one waits for nothing.
func TestBucketWait(t *testing.T) {
	b := ingress.NewBucket(10, 1)
	for _, step := range []struct {
		at   time.Duration
		ok   bool
		wait time.Duration
	}{
		{0, true, 100 * time.Millisecond}, // the only token taken: a retry now would wait
		{0, false, 100 * time.Millisecond},
		{40 * time.Millisecond, false, 60 * time.Millisecond},
		{100 * time.Millisecond, true, 100 * time.Millisecond},
	} {
		if ok, _ := b.Take(at(step.at)); ok != step.ok {
			t.Fatalf("Take at %v = %v, want %v", step.at, ok, step.ok)
		}
		if got := b.Wait(); got < step.wait-time.Microsecond || got > step.wait+time.Microsecond {
			t.Fatalf("Wait after %v = %v, want %v", step.at, got, step.wait)
		}
	}
	if got := ingress.NewBucket(10, 2).Wait(); got != 0 {
		t.Fatalf("a full bucket's Wait = %v, want 0", got)
	}
	var none *ingress.Bucket
	if got := none.Wait(); got != 0 {
		t.Fatalf("no limit's Wait = %v, want 0", got)
	}
}
