package statesync

import (
	"reflect"
	"testing"
)

// must is the one body of a version that fits one frame.
func must(parts [][]byte, err error) []byte {
	if err != nil || len(parts) != 1 {
		panic(err)
	}
	return parts[0]
}

func snapshotBody(version uint64, state map[string]any) []byte {
	cs, err := Snapshot(state)
	if err != nil {
		panic(err)
	}
	return must(AppendSnapshot(nil, propRoom, 20, version, cs.Ops(), 0))
}

func deltaBody(base, version uint64, from, to map[string]any) []byte {
	cs, err := Diff(from, to)
	if err != nil {
		panic(err)
	}
	return must(AppendDelta(nil, base, version, cs.Ops(), 0))
}

// deltaParts splits a version into parts of at most limit bytes.
func deltaParts(base, version uint64, from, to map[string]any, limit int) [][]byte {
	cs, _ := Diff(from, to)
	parts, err := AppendDelta(nil, base, version, cs.Ops(), limit)
	if err != nil {
		panic(err)
	}
	return parts
}

// trackerCase is a run of bodies through a fresh Tracker, each with the
// update and error it must give; state is the Tracker's state at the end.
type trackerCase struct {
	name   string
	bodies [][]byte
	want   []Update // Status, Version, Sync (Ops and Why unchecked here)
	errs   []string
	state  map[string]any
}

// trackerCases are section 8.3's rules, one case each. TestWriteVectors
// hands them to the TypeScript client as they are.
func trackerCases() []trackerCase {
	s1 := map[string]any{"a": int64(1), "t": map[string]any{"x": int64(1), "y": "why"}}
	s2 := map[string]any{"a": int64(2), "t": map[string]any{"x": 1.5, "z": true}}
	s3 := map[string]any{"a": int64(3)}
	big := map[string]any{}
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6"} {
		big[k] = "a value of some length, " + k
	}
	bigParts := deltaParts(1, 2, s1, big, 64)
	if len(bigParts) < 3 {
		panic("the big delta is not in parts")
	}
	corrupt := append([]byte(nil), bigParts[0]...)
	corrupt[len(corrupt)-1] ^= 0x80 // a broken last string byte: not UTF-8
	return []trackerCase{
		{
			name:   "a DELTA before any SNAPSHOT is a gap",
			bodies: [][]byte{deltaBody(1, 2, s1, s2)},
			want:   []Update{{Status: Gap, Version: 2, Sync: true}},
			errs:   []string{""},
		},
		{
			name:   "SNAPSHOT, DELTA, DELTA",
			bodies: [][]byte{snapshotBody(1, s1), deltaBody(1, 2, s1, s2), deltaBody(2, 3, s2, s3)},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Applied, Version: 2}, {Status: Applied, Version: 3}},
			errs:   []string{"", "", ""},
			state:  s3,
		},
		{
			name:   "a DELTA from another base is discarded until one from the version",
			bodies: [][]byte{snapshotBody(1, s1), deltaBody(2, 3, s2, s3), deltaBody(1, 2, s1, s2)},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Gap, Version: 3, Sync: true}, {Status: Applied, Version: 2}},
			errs:   []string{"", "", ""},
			state:  s2,
		},
		{
			name:   "a SNAPSHOT replaces the state whatever its version",
			bodies: [][]byte{snapshotBody(5, s2), snapshotBody(3, s1)},
			want:   []Update{{Status: Applied, Version: 5}, {Status: Applied, Version: 3}},
			errs:   []string{"", ""},
			state:  s1,
		},
		{
			name:   "parts are applied at once, at the last",
			bodies: append([][]byte{snapshotBody(1, s1)}, bigParts...),
			want:   partsWant(1, 2, len(bigParts)),
			errs:   make([]string, 1+len(bigParts)),
			state:  big,
		},
		{
			name:   "parts broken off by another version: dropped, the new frame taken",
			bodies: [][]byte{snapshotBody(1, s1), bigParts[0], bigParts[1], deltaBody(1, 3, s1, s2)},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Partial, Version: 2}, {Status: Partial, Version: 2}, {Status: Applied, Version: 3, Sync: true}},
			errs:   []string{"", "", "", ""},
			state:  s2,
		},
		{
			name:   "a part repeated: out of path order with the previous part",
			bodies: [][]byte{snapshotBody(1, s1), bigParts[0], bigParts[1], bigParts[1]},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Partial, Version: 2}, {Status: Partial, Version: 2}, {Status: Gap, Version: 2, Sync: true}},
			errs:   []string{"", "", "", "state frame: part 3: op 1: /k2 twice"},
			state:  s1,
		},
		{
			name:   "a part out of path order with the previous part",
			bodies: [][]byte{snapshotBody(1, s1), bigParts[0], bigParts[2], bigParts[1]},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Partial, Version: 2}, {Status: Partial, Version: 2}, {Status: Gap, Version: 2, Sync: true}},
			errs:   []string{"", "", "", "state frame: part 3: op 1: /k2 comes before the previous part's /k3 (path order)"},
			state:  s1,
		},
		{
			name:   "a part that does not decode: the rest of its version is skipped",
			bodies: append([][]byte{snapshotBody(1, s1), corrupt}, append(bigParts[1:], deltaBody(1, 2, s1, s2))...),
			want: append(append([]Update{{Status: Applied, Version: 1}, {Status: Gap, Sync: true}}, gaps(2, len(bigParts)-1)...),
				Update{Status: Applied, Version: 2}),
			errs:  append([]string{"", "state frame: byte 18: op 2: the string is not valid UTF-8"}, make([]string, len(bigParts))...),
			state: s2,
		},
		{
			name:   "a DELTA that does not apply leaves the state",
			bodies: [][]byte{snapshotBody(1, s3), deltaBody(1, 2, s1, s2)},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Gap, Version: 2, Sync: true}},
			errs:   []string{"", "state frame: op 2 (SET /t/x): /t is not a table"},
			state:  s3,
		},
		{
			name:   "END drops the state; a SNAPSHOT after it starts again",
			bodies: [][]byte{snapshotBody(1, s1), bigParts[0], AppendEnd(nil, "removed", "bye", 0), deltaBody(1, 2, s1, s2), snapshotBody(9, s3)},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Partial, Version: 2}, {Status: Ended}, {Status: Gap, Version: 2, Sync: true}, {Status: Applied, Version: 9}},
			errs:   []string{"", "", "", "", ""},
			state:  s3,
		},
		{
			name:   "a body that is not a frame",
			bodies: [][]byte{snapshotBody(1, s1), []byte(`{"version":1}`)},
			want:   []Update{{Status: Applied, Version: 1}, {Status: Gap, Sync: true}},
			errs:   []string{"", "state frame: byte 0: format 123 is not 1"},
			state:  s1,
		},
	}
}

func partsWant(base, version uint64, n int) []Update {
	out := []Update{{Status: Applied, Version: base}}
	for i := 1; i < n; i++ {
		out = append(out, Update{Status: Partial, Version: version})
	}
	return append(out, Update{Status: Applied, Version: version})
}

func gaps(version uint64, n int) []Update {
	out := make([]Update, n)
	for i := range out {
		out[i] = Update{Status: Gap, Version: version, Sync: true}
	}
	return out
}

// TestTracker: section 8.3 through the Go Tracker.
func TestTracker(t *testing.T) {
	for _, c := range trackerCases() {
		t.Run(c.name, func(t *testing.T) {
			var tr Tracker
			for i, body := range c.bodies {
				u, err := tr.Receive(body)
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				if msg != c.errs[i] {
					t.Fatalf("body %d: error %q, want %q", i+1, msg, c.errs[i])
				}
				w := c.want[i]
				if u.Status != w.Status || u.Version != w.Version || u.Sync != w.Sync {
					t.Fatalf("body %d: %v version %d sync %v (%s), want %v version %d sync %v", i+1, u.Status, u.Version, u.Sync, u.Why, w.Status, w.Version, w.Sync)
				}
			}
			if !reflect.DeepEqual(tr.State(), c.state) && !(tr.State() == nil && c.state == nil) {
				t.Fatalf("state %v, want %v", tr.State(), c.state)
			}
		})
	}
}

// TestSyncBody: shield.room.sync's body with and without a state.
func TestSyncBody(t *testing.T) {
	var tr Tracker
	if got := string(tr.SyncBody()); got != "{}" {
		t.Fatalf("without a state: %s", got)
	}
	if _, err := tr.Receive(snapshotBody(41, goldenState41())); err != nil {
		t.Fatal(err)
	}
	if got := string(tr.SyncBody()); got != `{"version":41}` {
		t.Fatalf("at 41: %s", got)
	}
	if u, _ := tr.Receive(deltaBody(40, 42, goldenState41(), goldenState42())); u.Why != "a DELTA from version 40, but the state is at version 41" {
		t.Fatalf("a DELTA from 40: %+v", u)
	}
}
