package statesync

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecode: any bytes decode to a clean *FrameError or a frame that
// AppendFrame writes back as exactly those bytes (the encoding is
// canonical, section 8.2), and neither Decode nor a Tracker, fresh or
// holding the worked example's state at version 41, panics on them.
func FuzzDecode(f *testing.F) {
	ex := readDocExample(f)
	for _, msg := range [][]byte{ex.snapshot, ex.delta, ex.end} {
		f.Add(msg[4+8:])
	}
	g := newGen(3)
	for i := 0; i < 8; i++ {
		states, sets := g.history(2)
		snap, _ := Snapshot(states[0])
		parts, _ := AppendSnapshot(nil, propRoom, 20, 1, snap.Ops(), 96)
		more, _ := AppendDelta(nil, 1, 3, mustCompose(sets).Ops(), 96)
		for _, p := range append(parts, more...) {
			f.Add(p)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1, 2, 0, 0x80, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Decode(b)
		if err != nil {
			fe, ok := err.(*FrameError)
			if !ok || !strings.HasPrefix(fe.Error(), "state frame: byte ") {
				t.Fatalf("Decode(% x): %T %v", b, err, err)
			}
		} else {
			again, err := AppendFrame(nil, &fr)
			if err != nil {
				t.Fatalf("Decode(% x) = %+v, which AppendFrame refuses: %v", b, fr, err)
			}
			if !bytes.Equal(again, b) {
				t.Fatalf("Decode(% x) = %+v, which AppendFrame writes as % x", b, fr, again)
			}
		}
		var fresh Tracker
		if _, err := fresh.Receive(b); err != nil {
			if _, ok := err.(*FrameError); !ok {
				t.Fatalf("Receive(% x): %T %v", b, err, err)
			}
		}
		var at41 Tracker
		if _, err := at41.Receive(ex.snapshot[12:]); err != nil {
			t.Fatal(err)
		}
		before := Clone(at41.State())
		u, err := at41.Receive(b)
		if err != nil {
			if _, ok := err.(*FrameError); !ok {
				t.Fatalf("Receive(% x) at 41: %T %v", b, err, err)
			}
		}
		if u.Status != Applied && u.Status != Ended && at41.State() != nil && !equalTrees(at41.State(), before) {
			t.Fatalf("Receive(% x) at 41: %v, but the state changed", b, u.Status)
		}
	})
}

func mustCompose(sets []Changes) Changes {
	c, err := Compose(sets...)
	if err != nil {
		panic(err)
	}
	return c
}

func equalTrees(a, b map[string]any) bool {
	x, _ := Diff(a, b)
	return len(x) == 0
}
