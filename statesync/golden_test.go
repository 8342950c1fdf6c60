package statesync

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/envelope"
)

// The worked example of docs/rooms.md section 8.2, as the doc states it.
const (
	goldenRoom   = "arena/9f3c2a1b4d5e6f70@gw-1"
	goldenTickHz = 20
	stateRoute   = 65520
)

func goldenState41() map[string]any {
	return map[string]any{
		"clock": int64(41),
		"players": map[string]any{
			"alice": map[string]any{"hp": int64(100), "x": int64(3), "y": int64(4)},
			"bob":   map[string]any{"hp": int64(100), "x": int64(7), "y": int64(1)},
		},
	}
}

// Tick 42 sets clock = 42 and players.alice.x = 3.5 and removes players.bob.
func goldenState42() map[string]any {
	return map[string]any{
		"clock": int64(42),
		"players": map[string]any{
			"alice": map[string]any{"hp": int64(100), "x": 3.5, "y": int64(4)},
		},
	}
}

// docExample is the worked example's bytes as docs/rooms.md writes them:
// the idlen SNAPSHOT and DELTA (length and header included), the
// delimiter line, the idlen END.
type docExample struct {
	snapshot, delta, end []byte
	delimiter            string
}

// readDocExample takes the example from the doc itself, so that the doc
// and the codec cannot drift apart: the first code block after "**Worked
// example.**" is the SNAPSHOT's hex, the second the DELTA's (the hex before
// each line's comment), the third the delimiter line, and the END is the
// backquoted hex after "ran out:".
func readDocExample(t testing.TB) docExample {
	t.Helper()
	raw, err := os.ReadFile("../docs/rooms.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "**Worked example.**")
	stop := strings.Index(doc, "**8.3 ")
	if start < 0 || stop < start {
		t.Fatal("docs/rooms.md: no worked example in section 8.2")
	}
	doc = doc[start:stop]
	blocks := regexp.MustCompile("(?s)```\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) != 3 {
		t.Fatalf("docs/rooms.md: the worked example has %d code blocks, want 3", len(blocks))
	}
	var ex docExample
	ex.snapshot = unhex(t, blocks[0][1])
	var delta strings.Builder
	for _, line := range strings.Split(blocks[1][1], "\n") {
		hexPart, _, _ := strings.Cut(line, "  ") // the comment follows two spaces or more
		delta.WriteString(hexPart + " ")
	}
	ex.delta = unhex(t, delta.String())
	ex.delimiter = strings.TrimSpace(blocks[2][1])
	m := regexp.MustCompile("ran out: `([0-9a-f\\s]+)`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/rooms.md: no END example")
	}
	ex.end = unhex(t, m[1])
	return ex
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// idlenPush is body as the gateway writes a push of it on route 65520 on
// idlen: length, version 1, route 00 ff f0, request 0.
func idlenPush(t testing.TB, body []byte) []byte {
	t.Helper()
	fr, err := envelope.New(envelope.NameIdlen, envelope.FromClient, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fr.AppendFrame(nil, &envelope.Frame{Kind: envelope.Push, RouteID: stateRoute, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func p(keys ...string) Path { return Path(keys) }

// TestGolden: the worked example of section 8.2, both ways. The states
// the doc states encode to its bytes (the SNAPSHOT from Snapshot, the
// DELTA from Diff of the two states), the bytes decode to exactly the ops
// and states it says, and each decoded frame encodes back to its bytes.
func TestGolden(t *testing.T) {
	ex := readDocExample(t)
	s41, s42 := goldenState41(), goldenState42()

	snapOps := []Op{
		{Kind: Set, Path: p("clock"), Value: Int(41)},
		{Kind: Set, Path: p("players"), Value: Table()},
		{Kind: Set, Path: p("players", "alice"), Value: Table()},
		{Kind: Set, Path: p("players", "alice", "hp"), Value: Int(100)},
		{Kind: Set, Path: p("players", "alice", "x"), Value: Int(3)},
		{Kind: Set, Path: p("players", "alice", "y"), Value: Int(4)},
		{Kind: Set, Path: p("players", "bob"), Value: Table()},
		{Kind: Set, Path: p("players", "bob", "hp"), Value: Int(100)},
		{Kind: Set, Path: p("players", "bob", "x"), Value: Int(7)},
		{Kind: Set, Path: p("players", "bob", "y"), Value: Int(1)},
	}
	deltaOps := []Op{
		{Kind: Set, Path: p("clock"), Value: Int(42)},
		{Kind: Set, Path: p("players", "alice", "x"), Value: Number(3.5)},
		{Kind: Remove, Path: p("players", "bob")},
	}

	t.Run("encode", func(t *testing.T) {
		snap, err := Snapshot(s41)
		if err != nil {
			t.Fatal(err)
		}
		if got := snap.Ops(); !reflect.DeepEqual(got, snapOps) {
			t.Fatalf("Snapshot(state 41) = %v\nwant %v", got, snapOps)
		}
		parts, err := AppendSnapshot(nil, goldenRoom, goldenTickHz, 41, snap.Ops(), 16384)
		if err != nil || len(parts) != 1 {
			t.Fatalf("AppendSnapshot: %d parts, %v", len(parts), err)
		}
		if got := idlenPush(t, parts[0]); !bytes.Equal(got, ex.snapshot) {
			t.Fatalf("SNAPSHOT on idlen\n got % x\nwant % x", got, ex.snapshot)
		}

		cs, err := Diff(s41, s42)
		if err != nil {
			t.Fatal(err)
		}
		if got := cs.Ops(); !reflect.DeepEqual(got, deltaOps) {
			t.Fatalf("Diff(41, 42) = %v\nwant %v", got, deltaOps)
		}
		parts, err = AppendDelta(nil, 41, 42, cs.Ops(), 16384)
		if err != nil || len(parts) != 1 {
			t.Fatalf("AppendDelta: %d parts, %v", len(parts), err)
		}
		if got := idlenPush(t, parts[0]); !bytes.Equal(got, ex.delta) {
			t.Fatalf("DELTA on idlen\n got % x\nwant % x", got, ex.delta)
		}
		// The doc's "8.2's delta is 64" bytes per member per tick on idlen.
		if len(ex.delta) != 64 {
			t.Fatalf("the DELTA on idlen is %d bytes, the doc says 64", len(ex.delta))
		}
		var line struct {
			Type    string `json:"type"`
			Route   string `json:"route"`
			RouteID int    `json:"route_id"`
			Payload string `json:"payload"`
		}
		if err := json.Unmarshal([]byte(ex.delimiter), &line); err != nil {
			t.Fatalf("the delimiter line: %v", err)
		}
		if line.Type != "push" || line.Route != "shield.room.state" || line.RouteID != stateRoute {
			t.Fatalf("the delimiter line's wrapper: %+v", line)
		}
		if want := base64.StdEncoding.EncodeToString(parts[0]); line.Payload != want {
			t.Fatalf("the delimiter payload is %s, the DELTA's base64 is %s", line.Payload, want)
		}

		end := AppendEnd(nil, "timeout", "", 16384)
		if got := idlenPush(t, end); !bytes.Equal(got, ex.end) {
			t.Fatalf("END on idlen\n got % x\nwant % x", got, ex.end)
		}
	})

	t.Run("decode", func(t *testing.T) {
		body := func(msg []byte) []byte { return msg[4+envelope.IdlenHeaderSize:] }
		cases := []struct {
			name  string
			msg   []byte
			frame Frame
		}{
			{"snapshot", ex.snapshot, Frame{Kind: SnapshotFrame, Version: 41, RoomID: goldenRoom, TickHz: goldenTickHz, Ops: snapOps}},
			{"delta", ex.delta, Frame{Kind: DeltaFrame, Base: 41, Version: 42, Ops: deltaOps}},
			{"end", ex.end, Frame{Kind: EndFrame, Reason: "timeout", Ops: nil}},
		}
		var tr Tracker
		for _, c := range cases {
			f, err := Decode(body(c.msg))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if c.frame.Kind == EndFrame {
				f.Ops = nil
			}
			if !reflect.DeepEqual(f, c.frame) {
				t.Fatalf("%s decodes to %+v\nwant %+v", c.name, f, c.frame)
			}
			again, err := AppendFrame(nil, &f)
			if err != nil || !bytes.Equal(again, body(c.msg)) {
				t.Fatalf("%s re-encodes to % x, %v", c.name, again, err)
			}
			u, err := tr.Receive(body(c.msg))
			if err != nil {
				t.Fatalf("%s: Receive: %v", c.name, err)
			}
			switch c.name {
			case "snapshot":
				if v, _ := tr.Version(); u.Status != Applied || v != 41 || !reflect.DeepEqual(tr.State(), s41) || tr.RoomID() != goldenRoom || tr.TickHz() != 20 {
					t.Fatalf("after the SNAPSHOT: %+v, version %d, state %v", u, v, tr.State())
				}
			case "delta":
				if v, _ := tr.Version(); u.Status != Applied || v != 42 || !reflect.DeepEqual(tr.State(), s42) || len(u.Ops) != 3 {
					t.Fatalf("after the DELTA: %+v, version %d, state %v", u, v, tr.State())
				}
			case "end":
				if _, ok := tr.Version(); u.Status != Ended || u.Reason != "timeout" || u.Message != "" || ok || tr.State() != nil {
					t.Fatalf("after the END: %+v", u)
				}
			}
		}
	})
}
