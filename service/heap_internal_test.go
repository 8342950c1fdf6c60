package service

import (
	"testing"
	"time"
)

// TestNextHeapCheck: far below the limit the heap watch reads less often,
// never later than the headroom takes at heapWatchRate (nor than
// heapWatchMax), never sooner than HeapCheckEvery.
func TestNextHeapCheck(t *testing.T) {
	const gib, mib = 1 << 30, 1 << 20
	every := 20 * time.Millisecond
	for _, c := range []struct {
		name        string
		heap, limit uint64
		every, want time.Duration
	}{
		{"idle, an 8 GiB limit: the longest wait", 50 * mib, 8 * gib, every, heapWatchMax},
		{"idle, the default 2 GiB limit: about 1/8 s", 50 * mib, 2 * gib, every, 121948242 * time.Nanosecond},
		{"1 GiB of headroom: 1/16 s", 1 * gib, 2 * gib, every, time.Second / 16},
		{"near the limit: every tick", 2*gib - 100*mib, 2 * gib, every, every},
		{"at the limit", 2 * gib, 2 * gib, every, every},
		{"over it", 3 * gib, 2 * gib, every, every},
		{"a small limit: every tick", 10 * mib, 64 * mib, every, every},
		{"a tick longer than the longest wait stays", 0, 2 * gib, time.Second, time.Second},
	} {
		if got := nextHeapCheck(c.heap, c.limit, c.every); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
