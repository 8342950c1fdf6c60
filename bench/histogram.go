package bench

import (
	"math/bits"
	"time"
)

// Histogram records latencies in log-linear buckets (8 per power of two of
// microseconds): within 12.5% everywhere, fixed size, no allocation per
// sample. Not safe for concurrent use; merge per-goroutine histograms.
type Histogram struct {
	counts [64 * 8]uint64
	total  uint64
	max    time.Duration
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{} }

func bucket(d time.Duration) int {
	us := uint64(d / time.Microsecond)
	if us < 8 {
		return int(us)
	}
	exp := 63 - bits.LeadingZeros64(us) // us in [2^exp, 2^(exp+1))
	sub := int((us >> (exp - 3)) & 7)
	return (exp-2)*8 + sub
}

// bucketLow is the smallest latency a bucket holds.
func bucketLow(b int) time.Duration {
	if b < 8 {
		return time.Duration(b) * time.Microsecond
	}
	exp := b/8 + 2
	sub := uint64(b % 8)
	return time.Duration((uint64(1)<<exp)|(sub<<(exp-3))) * time.Microsecond
}

// Record adds one sample.
func (h *Histogram) Record(d time.Duration) {
	b := bucket(d)
	if b >= len(h.counts) {
		b = len(h.counts) - 1
	}
	h.counts[b]++
	h.total++
	if d > h.max {
		h.max = d
	}
}

// Merge adds o's samples.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the lower bound of the bucket holding quantile q.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	want := uint64(q * float64(h.total))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > want {
			return bucketLow(i)
		}
	}
	return h.max
}
