package egress_test

import (
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/session"
)

// The egress checks run for every target of every push: they allocate
// nothing, accepted or refused (counts only, never time).

// TestChecksAllocateNothing holds CheckRoute, CheckRef and Check to 0
// allocations per target, on each row's outcome.
func TestChecksAllocateNothing(t *testing.T) {
	s := newSession(t, "p1")
	ref := s.Ref()
	r := &descriptor.EdgeRoute{ID: 1, Direction: config.S2C}
	f := push(8)
	big := push(100) // over the listener's max_frame_bytes
	stale := ref
	stale.Epoch++
	var batch []session.Item
	for name, fn := range map[string]func(){
		"CheckRoute":          func() { egress.CheckRoute(r) },
		"CheckRef":            func() { egress.CheckRef(ref, "gw-1", s) },
		"CheckRef mismatch":   func() { egress.CheckRef(ref, "gw-2", s) },
		"Check epoch_expired": func() { egress.Check(stale, "gw-1", s, f) },
		"Check too large":     func() { egress.Check(ref, "gw-1", s, big) },
		"Check accepted": func() {
			egress.Check(ref, "gw-1", s, f)
			batch = s.Take(batch[:0]) // written, as its connection would
			s.Written(batch)
		},
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

// BenchmarkCheck is SPEC §7's table for one target that passes every row
// (the push queued, then taken and written, as its connection would).
func BenchmarkCheck(b *testing.B) {
	s := newSession(b, "p1")
	ref := s.Ref()
	f := push(8)
	var batch []session.Item
	b.ReportAllocs()
	for b.Loop() {
		if code := egress.Check(ref, "gw-1", s, f); code != "" {
			b.Fatal(code)
		}
		batch = s.Take(batch[:0])
		s.Written(batch)
	}
}

// BenchmarkCheckRef is the ref rows alone (a kick's).
func BenchmarkCheckRef(b *testing.B) {
	s := newSession(b, "p1")
	ref := s.Ref()
	b.ReportAllocs()
	for b.Loop() {
		egress.CheckRef(ref, "gw-1", s)
	}
}
