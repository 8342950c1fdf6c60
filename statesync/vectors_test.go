package statesync

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
)

// vectorsFile is where the TypeScript client's tests read the vectors
// (clients/ts/test/room.test.ts).
const vectorsFile = "../clients/ts/test/fixtures/statesync-vectors.json"

// TestWriteVectors makes the vectors that hold clients/ts/src/room.ts to
// this package: scenarios (bodies through a fresh Tracker, each step's
// status, version, sync and error, and the state at the end), and decode
// cases (bodies, most of them mutations of the scenarios' bodies, with the
// frame or the error Decode gives). With SHIELD_WRITE_VECTORS=1 it writes
// them to clients/ts/test/fixtures/statesync-vectors.json; without, it
// fails when that committed file is not what this codec makes, so that the
// TypeScript tests never run against stale vectors.
func TestWriteVectors(t *testing.T) {
	out := makeVectors(t)
	if os.Getenv("SHIELD_WRITE_VECTORS") == "1" {
		if err := os.WriteFile(vectorsFile, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d bytes", vectorsFile, len(out))
		return
	}
	committed, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v (run SHIELD_WRITE_VECTORS=1 go test -run TestWriteVectors ./statesync/)", err)
	}
	if !bytes.Equal(committed, out) {
		t.Fatalf("%s is stale: run SHIELD_WRITE_VECTORS=1 go test -run TestWriteVectors ./statesync/", vectorsFile)
	}
}

type vecStep struct {
	Frame   string  `json:"frame"`
	Status  string  `json:"status"`
	Version *uint64 `json:"version"` // the Tracker's after the step; null without a state
	Sync    bool    `json:"sync"`
	Ops     int     `json:"ops"` // an applied version's ops: its change events
	Error   string  `json:"error,omitempty"`
}

type vecScenario struct {
	Name  string         `json:"name"`
	Steps []vecStep      `json:"steps"`
	State map[string]any `json:"state"` // null without a state
	Room  string         `json:"room,omitempty"`
}

type vecOp struct {
	Op    string   `json:"op"`
	Path  []string `json:"path"`
	Value any      `json:"value,omitempty"`
	Table bool     `json:"table,omitempty"`
}

type vecFrame struct {
	Kind      string  `json:"kind"`
	Continues bool    `json:"continues,omitempty"`
	Base      uint64  `json:"base"`
	Version   uint64  `json:"version"`
	Room      string  `json:"room,omitempty"`
	TickHz    uint8   `json:"tick_hz,omitempty"`
	Ops       []vecOp `json:"ops"`
	Reason    string  `json:"reason,omitempty"`
	Message   string  `json:"message,omitempty"`
}

type vecDecode struct {
	Frame  string    `json:"frame"`
	Error  string    `json:"error,omitempty"`
	Decode *vecFrame `json:"decoded,omitempty"`
}

func makeVectors(t *testing.T) []byte {
	var scenarios []vecScenario
	ex := readDocExample(t)
	golden := [][]byte{ex.snapshot[12:], ex.delta[12:], ex.end[12:]}
	scenarios = append(scenarios, run(t, "the worked example of docs/rooms.md 8.2", golden))
	for _, c := range trackerCases() {
		scenarios = append(scenarios, run(t, c.name, c.bodies))
	}
	g := newGen(4)
	for i := 0; i < 60; i++ {
		scenarios = append(scenarios, syncScenario(t, g, i))
	}
	for i := 0; i < 25; i++ {
		scenarios = append(scenarios, mismatchScenario(t, g, i))
	}

	// Decode cases: every scenario body, and mutations of them.
	var bodies [][]byte
	seen := map[string]bool{}
	add := func(b []byte) {
		if k := string(b); !seen[k] {
			seen[k] = true
			bodies = append(bodies, b)
		}
	}
	for _, s := range scenarios {
		for _, st := range s.Steps {
			b, _ := hex.DecodeString(st.Frame)
			add(b)
		}
	}
	originals := len(bodies)
	for i := 0; i < 600; i++ {
		add(g.mutateBytes(bodies[g.r.IntN(originals)]))
	}
	for _, c := range rejectCases(t) {
		add(c.body)
	}
	for _, c := range acceptCases(t) {
		add(c.body)
	}
	var decodes []vecDecode
	for _, b := range bodies {
		decodes = append(decodes, decodeVector(b))
	}

	var buf bytes.Buffer
	buf.WriteString("{\n\"comment\": \"Written by SHIELD_WRITE_VECTORS=1 go test -run TestWriteVectors ./statesync/ (statesync/vectors_test.go); do not edit. Each scenario feeds its frames (hex bodies of shield.room.state) to a fresh RoomState; each decode case is one body and its frame or error.\",\n\"scenarios\": [\n")
	for i, s := range scenarios {
		writeLine(t, &buf, s, i < len(scenarios)-1)
	}
	buf.WriteString("],\n\"decode\": [\n")
	for i, d := range decodes {
		writeLine(t, &buf, d, i < len(decodes)-1)
	}
	buf.WriteString("]\n}\n")
	return buf.Bytes()
}

func writeLine(t *testing.T, buf *bytes.Buffer, v any, comma bool) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(b)
	if comma {
		buf.WriteByte(',')
	}
	buf.WriteByte('\n')
}

// run feeds bodies to a fresh Tracker and records what each did.
func run(t *testing.T, name string, bodies [][]byte) vecScenario {
	var tr Tracker
	s := vecScenario{Name: name}
	for _, b := range bodies {
		u, err := tr.Receive(b)
		st := vecStep{Frame: hex.EncodeToString(b), Status: u.Status.String(), Sync: u.Sync, Ops: len(u.Ops)}
		if v, ok := tr.Version(); ok {
			st.Version = &v
		}
		if err != nil {
			st.Error = err.Error()
		}
		s.Steps = append(s.Steps, st)
	}
	s.State = tr.State()
	if s.State != nil {
		s.Room = tr.RoomID()
	}
	return s
}

// syncScenario is what a member with a random view gets over a random
// run of versions: its SNAPSHOT at a random version, then a DELTA per
// version (or a composed one, as after a refusal), in parts under a small
// limit, and the view of the last state it must end at.
func syncScenario(t *testing.T, g *gen, i int) vecScenario {
	n := 2 + g.r.IntN(6)
	states, sets := g.history(n)
	view := g.view(states...)
	small := 24 + g.r.IntN(160)
	b := g.r.IntN(n)
	snap, _ := Snapshot(states[b])
	ops := view.Filter(snap)
	bodies, err := AppendSnapshot(nil, propRoom, 20, uint64(b), ops, limitFor(ops, small, propRoom))
	if err != nil {
		t.Fatal(err)
	}
	for base := b; base < n; {
		next := base + 1 + g.r.IntN(n-base)
		comp, err := Compose(sets[base:next]...)
		if err != nil {
			t.Fatal(err)
		}
		if ops := view.Filter(comp); len(ops) > 0 {
			if bodies, err = AppendDelta(bodies, uint64(base), uint64(next), ops, limitFor(ops, small, "")); err != nil {
				t.Fatal(err)
			}
			base = next
		} else if next == n {
			break
		}
	}
	s := run(t, fmt.Sprintf("sync %d: versions %d..%d, view %v", i, b, n, view.Prefixes()), bodies)
	if want := view.Tree(states[n]); !reflect.DeepEqual(s.State, want) {
		t.Fatalf("%s: the Tracker ends at\n%v\nwant\n%v", s.Name, s.State, want)
	}
	return s
}

// mismatchScenario is a DELTA made for another state than the one the
// member holds, with the right base: it applies, or fails with Apply's
// message and leaves the state.
func mismatchScenario(t *testing.T, g *gen, i int) vecScenario {
	held, other := g.tree(0), g.tree(0)
	next := Clone(other)
	g.mutate(next)
	cs, _ := Diff(other, next)
	if len(cs) == 0 {
		cs = Changes{{Op: Op{Kind: Remove, Path: Path{"nowhere"}}}}
	}
	bodies := [][]byte{snapshotBody(3, held)}
	bodies, err := AppendDelta(bodies, 3, 4, cs.Ops(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, fmt.Sprintf("mismatch %d", i), bodies)
}

// mutateBytes is b with one to three random edits: a bit flipped, a byte
// set, one cut, inserted or removed, or the body cut short.
func (g *gen) mutateBytes(b []byte) []byte {
	out := append([]byte(nil), b...)
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		if len(out) == 0 {
			out = append(out, byte(g.r.IntN(256)))
			continue
		}
		i := g.r.IntN(len(out))
		switch g.r.IntN(6) {
		case 0:
			out[i] ^= 1 << g.r.IntN(8)
		case 1:
			out[i] = []byte{0x00, 0x01, 0x02, 0x03, 0x05, 0x7f, 0x80, 0xff}[g.r.IntN(8)]
		case 2:
			out = out[:i]
		case 3:
			out = append(out[:i], append([]byte{byte(g.r.IntN(256))}, out[i:]...)...)
		case 4:
			out = append(out[:i], out[i+1:]...)
		default:
			out[i] = byte(g.r.IntN(256))
		}
	}
	return out
}

func decodeVector(b []byte) vecDecode {
	d := vecDecode{Frame: hex.EncodeToString(b)}
	f, err := Decode(b)
	if err != nil {
		d.Error = err.Error()
		return d
	}
	vf := &vecFrame{Kind: map[FrameKind]string{SnapshotFrame: "snapshot", DeltaFrame: "delta", EndFrame: "end"}[f.Kind],
		Continues: f.Continues, Base: f.Base, Version: f.Version, Room: f.RoomID, TickHz: f.TickHz,
		Reason: f.Reason, Message: f.Message, Ops: []vecOp{}}
	for _, op := range f.Ops {
		o := vecOp{Op: "remove", Path: op.Path}
		if op.Kind == Set {
			o.Op = "set"
			if op.Value.Kind() == KindTable {
				o.Table = true
			} else {
				o.Value = op.Value.Any()
			}
		}
		vf.Ops = append(vf.Ops, o)
	}
	d.Decode = vf
	return d
}
