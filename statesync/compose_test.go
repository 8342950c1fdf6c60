package statesync

import (
	"bytes"
	"reflect"
	"testing"
)

const propRoom = "arena/0123456789abcdef@svc-1"

// TestComposeProperty: random state trees under random sets and removes.
// For every run of versions: each version's Diff applied to the one before
// gives it; the composed change set from a random base b to the last
// version n, applied at b, gives n; through a random view, the filtered
// composition applied to the view of b gives the view of n; and the same
// as bytes: the view's SNAPSHOT at b and its DELTA to n, split into parts
// under a small max_frame_bytes, through a Tracker, give the view of n,
// each part re-encoding to its own bytes.
func TestComposeProperty(t *testing.T) {
	runs := 400
	if testing.Short() {
		runs = 100
	}
	g := newGen(1)
	for run := 0; run < runs; run++ {
		n := 1 + g.r.IntN(8)
		states, sets := g.history(n)
		for v := 1; v <= n; v++ {
			got := Clone(states[v-1])
			if err := Apply(got, sets[v-1].Ops()); err != nil {
				t.Fatalf("run %d: version %d's Diff does not apply: %v", run, v, err)
			}
			if !reflect.DeepEqual(got, states[v]) {
				t.Fatalf("run %d: version %d: Diff applied gives\n%v\nwant\n%v", run, v, got, states[v])
			}
			if same, _ := Diff(states[v], Clone(states[v])); len(same) != 0 {
				t.Fatalf("run %d: Diff of a state and its copy: %v", run, same.Ops())
			}
		}
		b := g.r.IntN(n)
		comp, err := Compose(sets[b:]...)
		if err != nil {
			t.Fatalf("run %d: Compose(%d..%d): %v", run, b+1, n, err)
		}
		got := Clone(states[b])
		if err := Apply(got, comp.Ops()); err != nil {
			t.Fatalf("run %d: composed %d..%d does not apply at %d: %v", run, b+1, n, b, err)
		}
		if !reflect.DeepEqual(got, states[n]) {
			t.Fatalf("run %d: composed %d..%d at %d gives\n%v\nwant\n%v", run, b+1, n, b, got, states[n])
		}
		// Composing in two steps is composing at once.
		if b+1 < n {
			mid := b + 1 + g.r.IntN(n-b-1)
			left, err1 := Compose(sets[b:mid]...)
			right, err2 := Compose(sets[mid:]...)
			two, err3 := Compose(left, right)
			if err1 != nil || err2 != nil || err3 != nil || !reflect.DeepEqual(two, comp) {
				t.Fatalf("run %d: Compose(Compose(%d..%d), Compose(%d..%d)) = %v (%v %v %v)\nwant %v", run, b+1, mid, mid+1, n, two.Ops(), err1, err2, err3, comp.Ops())
			}
		}

		view := g.view(states[b], states[n])
		vb, vn := view.Tree(states[b]), view.Tree(states[n])
		ops := view.Filter(comp)
		got = Clone(vb)
		if err := Apply(got, ops); err != nil {
			t.Fatalf("run %d: view %v: the filtered delta does not apply: %v", run, view.Prefixes(), err)
		}
		if !reflect.DeepEqual(got, vn) {
			t.Fatalf("run %d: view %v: filtered delta gives\n%v\nwant\n%v", run, view.Prefixes(), got, vn)
		}

		snap, err := Snapshot(states[b])
		if err != nil {
			t.Fatal(err)
		}
		snapOps := view.Filter(snap)
		want, _ := Snapshot(vb)
		if !reflect.DeepEqual(snapOps, want.Ops()) && !(len(snapOps) == 0 && len(want) == 0) {
			t.Fatalf("run %d: view %v: Filter(Snapshot) = %v\nwant Snapshot(view) = %v", run, view.Prefixes(), snapOps, want.Ops())
		}
		small := 24 + g.r.IntN(200)
		var tr Tracker
		sparts, err := AppendSnapshot(nil, propRoom, 20, uint64(b), snapOps, limitFor(snapOps, small, propRoom))
		if err != nil {
			t.Fatalf("run %d: AppendSnapshot: %v", run, err)
		}
		feed(t, &tr, sparts, Applied)
		if v, ok := tr.Version(); !ok || v != uint64(b) || !reflect.DeepEqual(tr.State(), vb) {
			t.Fatalf("run %d: after the SNAPSHOT parts: version %d, %v\nwant %v", run, v, tr.State(), vb)
		}
		if len(ops) == 0 {
			continue // no change in a view, no frame
		}
		dparts, err := AppendDelta(nil, uint64(b), uint64(n), ops, limitFor(ops, small, ""))
		if err != nil {
			t.Fatalf("run %d: AppendDelta: %v", run, err)
		}
		u := feed(t, &tr, dparts, Applied)
		if v, _ := tr.Version(); v != uint64(n) || !reflect.DeepEqual(tr.State(), vn) || !reflect.DeepEqual(u.Ops, ops) {
			t.Fatalf("run %d: after the DELTA parts: version %d, %v\nwant %v", run, v, tr.State(), vn)
		}
	}
}

// feed gives a Tracker a version's parts: each but the last Partial, the
// last want; every part re-encodes to its own bytes and fits nothing
// bigger than the parts it came in.
func feed(t *testing.T, tr *Tracker, parts [][]byte, want Status) Update {
	t.Helper()
	var u Update
	for i, part := range parts {
		f, err := Decode(part)
		if err != nil {
			t.Fatalf("part %d of %d: %v", i+1, len(parts), err)
		}
		if again, err := AppendFrame(nil, &f); err != nil || !bytes.Equal(again, part) {
			t.Fatalf("part %d re-encodes to % x (%v), not % x", i+1, again, err, part)
		}
		if f.Continues != (i < len(parts)-1) {
			t.Fatalf("part %d of %d: CONTINUES %v", i+1, len(parts), f.Continues)
		}
		u, err = tr.Receive(part)
		if err != nil {
			t.Fatalf("part %d of %d: Receive: %v", i+1, len(parts), err)
		}
		if st := map[bool]Status{true: Partial, false: want}[i < len(parts)-1]; u.Status != st {
			t.Fatalf("part %d of %d: %v, want %v", i+1, len(parts), u.Status, st)
		}
	}
	return u
}

// TestSnapshotRoundTrip: any state, as a SNAPSHOT in parts of any small
// limit, through a Tracker, is itself; so are its parts concatenated as
// one frame's ops.
func TestSnapshotRoundTrip(t *testing.T) {
	g := newGen(2)
	for run := 0; run < 300; run++ {
		state := g.tree(0)
		snap, err := Snapshot(state)
		if err != nil {
			t.Fatal(err)
		}
		ops := snap.Ops()
		limit := limitFor(ops, 16+g.r.IntN(300), propRoom)
		parts, err := AppendSnapshot(nil, propRoom, uint8(1+g.r.IntN(60)), 7, ops, limit)
		if err != nil {
			t.Fatal(err)
		}
		var all []Op
		for _, part := range parts {
			if len(part) > limit {
				t.Fatalf("run %d: a part of %d bytes, limit %d", run, len(part), limit)
			}
			f, _ := Decode(part)
			all = append(all, f.Ops...)
		}
		if !reflect.DeepEqual(all, ops) && len(ops) > 0 {
			t.Fatalf("run %d: the parts' ops are not the snapshot's", run)
		}
		var tr Tracker
		feed(t, &tr, parts, Applied)
		if !reflect.DeepEqual(tr.State(), state) {
			t.Fatalf("run %d: round trip gives\n%v\nwant\n%v", run, tr.State(), state)
		}
		whole, err := AppendSnapshot(nil, propRoom, 20, 7, ops, 0)
		if err != nil || len(whole) != 1 {
			t.Fatalf("run %d: without a limit: %d parts, %v", run, len(whole), err)
		}
	}
}

// TestViewsFilter: the rules of section 7.4 on fixed cases.
func TestViewsFilter(t *testing.T) {
	state := map[string]any{
		"public": map[string]any{"round": int64(3)},
		"hand":   map[string]any{"alice": map[string]any{"cards": "AK"}, "bob": map[string]any{"cards": "QQ"}},
		"secret": int64(7),
		"scores": int64(9), // a scalar where a prefix goes through: hidden
	}
	alice, _ := NewView(p("public"), p("hand", "alice"), p("scores", "alice"))
	want := map[string]any{
		"public": map[string]any{"round": int64(3)},
		"hand":   map[string]any{"alice": map[string]any{"cards": "AK"}},
	}
	if got := alice.Tree(state); !reflect.DeepEqual(got, want) {
		t.Fatalf("alice's view: %v\nwant %v", got, want)
	}
	next := Clone(state)
	next["scores"] = map[string]any{"alice": int64(1), "bob": int64(2)} // a scalar becomes a table on the way to a prefix
	next["hand"] = int64(0)                                             // a table on the way becomes a scalar: removed from the view
	next["secret"] = int64(8)
	cs, _ := Diff(state, next)
	got := alice.Filter(cs)
	wantOps := []Op{
		{Kind: Remove, Path: p("hand")},
		{Kind: Set, Path: p("scores"), Value: Table()},
		{Kind: Set, Path: p("scores", "alice"), Value: Int(1)},
	}
	if !reflect.DeepEqual(got, wantOps) {
		t.Fatalf("alice's ops: %v\nwant %v", got, wantOps)
	}
	// A scalar on the way that the member never saw changes nothing.
	again := Clone(next)
	again["hand"] = int64(1)
	cs, _ = Diff(next, again)
	if got := alice.Filter(cs); len(got) != 0 {
		t.Fatalf("a hidden scalar's change: %v", got)
	}
}

// TestComposeCancels: what a later version undoes disappears from the
// composition; what it replaces keeps the base's Prior.
func TestComposeCancels(t *testing.T) {
	s0 := map[string]any{"t": map[string]any{"x": int64(1)}, "k": int64(1)}
	s1 := map[string]any{"t": int64(5), "k": int64(1), "n": int64(1)}
	s2 := map[string]any{"t": map[string]any{"x": int64(1)}, "k": int64(1)}
	c1, _ := Diff(s0, s1)
	c2, _ := Diff(s1, s2)
	comp, err := Compose(c1, c2)
	if err != nil {
		t.Fatal(err)
	}
	want := Changes{
		{Op: Op{Kind: Set, Path: p("t"), Value: Table()}, Prior: Tabled},
		{Op: Op{Kind: Set, Path: p("t", "x"), Value: Int(1)}, Prior: Absent},
	}
	if !reflect.DeepEqual(comp, want) {
		t.Fatalf("Compose = %v\nwant %v", comp, want)
	}
	bad := Changes{{Op: Op{Kind: Set, Path: p("t", "x", "y"), Value: Int(1)}}}
	if _, err := Compose(c1, bad); err == nil || err.Error() != "statesync: compose: a change under /t, which an earlier change set made a scalar or removed" {
		t.Fatalf("Compose of a change under a scalar: %v", err)
	}
}
