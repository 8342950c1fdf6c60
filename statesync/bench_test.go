package statesync

import (
	"fmt"
	"testing"
)

// The figure of docs/rooms.md section 14: a state of 20 fields of which 3
// change each tick (gateway bench -fields 20 -changing 3).
func benchStates() (prev, next map[string]any) {
	prev = map[string]any{}
	for i := 0; i < 20; i++ {
		k := fmt.Sprintf("field_%02d", i)
		switch i % 4 {
		case 0:
			prev[k] = int64(1000 + i)
		case 1:
			prev[k] = float64(i) + 0.25
		case 2:
			prev[k] = fmt.Sprintf("value %d", i)
		default:
			prev[k] = i%2 == 0
		}
	}
	next = Clone(prev)
	next["field_00"] = int64(1234) // an integer
	next["field_05"] = 42.75       // a float
	next["field_10"] = "changed"   // a string
	return prev, next
}

// BenchmarkEncodeDelta: a tick's DELTA body of the three changed fields
// from its ops (what a room encodes once per distinct view and base).
func BenchmarkEncodeDelta(b *testing.B) {
	prev, next := benchStates()
	cs, err := Diff(prev, next)
	if err != nil || len(cs) != 3 {
		b.Fatalf("%d changes, %v", len(cs), err)
	}
	ops := cs.Ops()
	parts := make([][]byte, 0, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		parts, err = AppendDelta(parts[:0], uint64(i)+1000, uint64(i)+1001, ops, 16384)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(parts[0])), "bytes/delta")
}

// BenchmarkDiffEncode: the change set of the tick from the two states,
// then its body: the codec's share of a room-tick for one view.
func BenchmarkDiffEncode(b *testing.B) {
	prev, next := benchStates()
	parts := make([][]byte, 0, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs, err := Diff(prev, next)
		if err != nil {
			b.Fatal(err)
		}
		parts, err = AppendDelta(parts[:0], 1000, 1001, cs.Ops(), 16384)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(parts[0])), "bytes/delta")
}

// BenchmarkDecodeApply: a client's side of the same DELTA: decode the
// body and apply its ops to a 20-field state.
func BenchmarkDecodeApply(b *testing.B) {
	prev, next := benchStates()
	cs, _ := Diff(prev, next)
	body := must(AppendDelta(nil, 1000, 1001, cs.Ops(), 16384))
	state := Clone(prev)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		if err := Apply(state, f.Ops); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(body)), "bytes/delta")
}

// BenchmarkEncodeSnapshot: a joiner's SNAPSHOT of the 20 fields.
func BenchmarkEncodeSnapshot(b *testing.B) {
	prev, _ := benchStates()
	snap, _ := Snapshot(prev)
	ops := snap.Ops()
	parts := make([][]byte, 0, 1)
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		parts, err = AppendSnapshot(parts[:0], "arena/9f3c2a1b4d5e6f70@svc-1", 20, 1000, ops, 16384)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(parts[0])), "bytes/snapshot")
}
