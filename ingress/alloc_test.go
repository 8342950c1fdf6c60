package ingress_test

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/ingress"
)

// The edge checks run for every frame a client sends: they allocate
// nothing, whatever they decide (counts only, never time: the machine
// the tests run on is shared).

// admitCases are the verdicts a frame can get, each admitted or refused
// without allocating.
func admitCases(t testing.TB) []struct {
	name string
	f    ingress.Frame
	s    ingress.Session
} {
	now := time.Now()
	return []struct {
		name string
		f    ingress.Frame
		s    ingress.Session
	}{
		{"delivered", ingress.Frame{Route: route(config.C2S, true, 0), Authenticated: true, Now: now}, newSession(t, 1<<30)},
		{"rate limited", ingress.Frame{Route: route(config.C2S, false, 0), Bucket: ingress.NewBucket(1, 1), Now: now}, newSession(t, 1<<30)},
		{"route not found", ingress.Frame{Now: now}, newSession(t, 1<<30)},
		{"not authenticated", ingress.Frame{Route: route(config.C2S, true, 0), Now: now}, newSession(t, 1<<30)},
		{"busy", ingress.Frame{Route: route(config.C2S, false, 0), Now: now}, newSession(t, 0)},
	}
}

// TestAdmitAllocatesNothing holds Admit to 0 allocations per frame.
func TestAdmitAllocatesNothing(t *testing.T) {
	for _, tc := range admitCases(t) {
		s := tc.s
		if n := testing.AllocsPerRun(100, func() {
			if v := ingress.Admit(tc.f, s, delivered); v.Code == "" {
				s.Release()
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per frame", tc.name, n)
		}
	}
	b := ingress.NewBucket(1000, 1000)
	if n := testing.AllocsPerRun(100, func() { b.Take(time.Now()) }); n != 0 {
		t.Errorf("Bucket.Take: %v allocations", n)
	}
}

// BenchmarkAdmit is the edge table for a frame that passes every row.
func BenchmarkAdmit(b *testing.B) {
	tc := admitCases(b)[0]
	tc.f.Bucket = ingress.NewBucket(1<<30, 1<<30)
	b.ReportAllocs()
	for b.Loop() {
		if v := ingress.Admit(tc.f, tc.s, delivered); v.Code == "" {
			tc.s.Release()
		}
	}
}

// BenchmarkAdmitRefused is the edge table for a frame over max_inflight.
func BenchmarkAdmitRefused(b *testing.B) {
	tc := admitCases(b)[4]
	b.ReportAllocs()
	for b.Loop() {
		ingress.Admit(tc.f, tc.s, delivered)
	}
}
