package statesync

import (
	"bytes"
	"encoding/hex"
	"math"
	"reflect"
	"strings"
	"testing"
)

// h is a body from hex pieces (spaces ignored).
func h(t testing.TB, pieces ...string) []byte {
	t.Helper()
	return unhex(t, strings.Join(pieces, " "))
}

// vhex is v as a varint in hex, for varints too long to write by hand.
func vhex(v uint64) string { return hex.EncodeToString(appendUvarint(nil, v)) }

// A DELTA header from 41 to 42 (bytes 0-4), before the count.
const d41 = "01 02 00 29 2a"

type rejectCase struct {
	name string
	body []byte
	want string
}

// TestRejects: every rejection of section 8.2 a decoder makes (and the
// ones docs/rooms.md adds for canonical bytes and JavaScript's numbers),
// each with its exact message and byte offset. TestWriteVectors hands the
// same bodies to the TypeScript decoder.
func TestRejects(t *testing.T) {
	for _, c := range rejectCases(t) {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.body)
			if err == nil {
				t.Fatalf("Decode(% x) accepted it, want %q", c.body, c.want)
			}
			if _, ok := err.(*FrameError); !ok || err.Error() != c.want {
				t.Fatalf("Decode(% x)\n got %T %q\nwant %q", c.body, err, err, c.want)
			}
		})
	}
}

func rejectCases(t testing.TB) []rejectCase {
	return []rejectCase{
		{"empty", h(t, ""), "state frame: byte 0: truncated in the format"},
		{"format 2", h(t, "02 02 00 29 2a 00"), "state frame: byte 0: format 2 is not 1"},
		{"format 0", h(t, "00"), "state frame: byte 0: format 0 is not 1"},
		{"no kind", h(t, "01"), "state frame: byte 1: truncated in the kind"},
		{"kind 0", h(t, "01 00 00"), "state frame: byte 1: kind 0 is not 1 (SNAPSHOT), 2 (DELTA) or 3 (END)"},
		{"kind 4", h(t, "01 04 00"), "state frame: byte 1: kind 4 is not 1 (SNAPSHOT), 2 (DELTA) or 3 (END)"},
		{"no flags", h(t, "01 02"), "state frame: byte 2: truncated in the flags"},
		{"flag bit 1", h(t, "01 02 02 29 2a 00"), "state frame: byte 2: flags 0x02: only bit 0 (CONTINUES) is defined"},
		{"flag bit 7 with bit 0", h(t, "01 01 81 00 00 00 14 00"), "state frame: byte 2: flags 0x81: only bit 0 (CONTINUES) is defined"},
		{"END continues", h(t, "01 03 01 00 00"), "state frame: byte 2: flags 0x01: an END has no flags"},
		{"no base", h(t, "01 02 00"), "state frame: byte 3: truncated in the base"},
		{"base cut in its varint", h(t, "01 02 00 80"), "state frame: byte 3: truncated in the base"},
		{"base not minimal", h(t, "01 02 00 80 00 2a 00"), "state frame: byte 3: the base is a varint that is not minimal"},
		{"base not minimal, 3 bytes", h(t, "01 02 00 a9 80 00 2a 00"), "state frame: byte 3: the base is a varint that is not minimal"},
		{"base of 9 bytes", h(t, "01 02 00 ff ff ff ff ff ff ff ff 01 00"), "state frame: byte 3: the base is a varint longer than 8 bytes"},
		{"base above 2^53", h(t, "01 02 00", vhex(MaxSafe+1), vhex(MaxSafe+2), "00"), "state frame: byte 3: the base is above 2^53"},
		{"version above 2^53", h(t, "01 01 00 00", vhex(MaxSafe+1), "00 14 00"), "state frame: byte 4: the version is above 2^53"},
		{"no version", h(t, "01 02 00 29"), "state frame: byte 4: truncated in the version"},
		{"SNAPSHOT base not 0", h(t, "01 01 00 05 06 00 14 00"), "state frame: byte 3: a SNAPSHOT's base is 0, got 5"},
		{"DELTA base = version", h(t, "01 02 00 2a 2a 00"), "state frame: byte 3: a DELTA's base 42 is not below its version 42"},
		{"DELTA base > version", h(t, "01 02 00 2b 2a 00"), "state frame: byte 3: a DELTA's base 43 is not below its version 42"},
		{"no room id", h(t, "01 01 00 00 01"), "state frame: byte 5: truncated in the room id length"},
		{"room id cut", h(t, "01 01 00 00 01 05 61 62"), "state frame: byte 5: truncated in the room id"},
		{"room id not UTF-8", h(t, "01 01 00 00 01 01 ff 14 00"), "state frame: byte 5: the room id is not valid UTF-8"},
		{"no tick_hz", h(t, "01 01 00 00 01 00"), "state frame: byte 6: truncated in the tick_hz"},
		{"no count", h(t, d41), "state frame: byte 5: truncated in the count"},
		{"count above 2^53", h(t, d41, vhex(MaxSafe+1)), "state frame: byte 5: the count is above 2^53"},
		{"count 1, no op", h(t, d41, "01"), "state frame: byte 6: count 1, but the frame ends after 0 of them"},
		{"count 2, one op", h(t, d41, "02 01 00 01 01 61 01"), "state frame: byte 12: count 2, but the frame ends after 1 of them"},
		{"huge count, one op", h(t, d41, vhex(MaxSafe), "01 00 01 01 61 01"), "state frame: byte 19: count 9007199254740992, but the frame ends after 1 of them"},
		{"trailing byte", h(t, d41, "01 01 00 01 01 61 01 00"), "state frame: byte 12: trailing bytes after the last of count 1 ops"},
		{"trailing after count 0", h(t, d41, "00 02"), "state frame: byte 6: trailing bytes after the last of count 0 ops"},
		{"END trailing", h(t, "01 03 00 00 00 00"), "state frame: byte 5: trailing bytes after the END's message"},
		{"END reason cut", h(t, "01 03 00 05 61"), "state frame: byte 3: truncated in the reason"},
		{"END no message", h(t, "01 03 00 00"), "state frame: byte 4: truncated in the message length"},
		{"END message not UTF-8", h(t, "01 03 00 00 01 c3"), "state frame: byte 4: the message is not valid UTF-8"},
		{"op code 0", h(t, d41, "01 00 00 01 01 61"), "state frame: byte 6: op 1: code 0 is not 1 (SET) or 2 (REMOVE)"},
		{"op code 3", h(t, d41, "01 03 00 01 01 61"), "state frame: byte 6: op 1: code 3 is not 1 (SET) or 2 (REMOVE)"},
		{"no shared", h(t, d41, "01 01"), "state frame: byte 7: truncated in the shared"},
		{"first op shares", h(t, d41, "01 01 01 01 01 61 01"), "state frame: byte 7: op 1: shared 1 is above the previous path's length 0"},
		{"shared above the previous", h(t, d41, "02 02 00 01 01 61 02 02 01 01 62"), "state frame: byte 12: op 2: shared 2 is above the previous path's length 1"},
		{"shared not minimal", h(t, d41, "01 02 80 00 01 01 61"), "state frame: byte 7: the shared is a varint that is not minimal"},
		{"no added", h(t, d41, "01 02 00"), "state frame: byte 8: truncated in the added"},
		{"a path of 0 keys", h(t, d41, "01 02 00 00"), "state frame: byte 8: op 1: shared 0 + added 0 keys: a path is 1 to 16 keys"},
		{"a path of 17 keys", h(t, d41, "01 02 00 11", strings.Repeat("01 61 ", 17)), "state frame: byte 8: op 1: shared 0 + added 17 keys: a path is 1 to 16 keys"},
		{"shared + added over 16", h(t, d41, "02 02 00 10", strings.Repeat("01 61 ", 16), "02 10 01 01 62"), "state frame: byte 43: op 2: shared 16 + added 1 keys: a path is 1 to 16 keys"},
		{"added above 2^53", h(t, d41, "01 02 00", vhex(MaxSafe+1)), "state frame: byte 8: the added is above 2^53"},
		{"key cut", h(t, d41, "01 02 00 01 03 61"), "state frame: byte 9: truncated in the key"},
		{"no key", h(t, d41, "01 02 00 02 01 61"), "state frame: byte 11: truncated in the key length"},
		{"key length above 2^53", h(t, d41, "01 02 00 01", vhex(MaxSafe+1)), "state frame: byte 9: the key length is above 2^53"},
		{"key not UTF-8", h(t, d41, "01 02 00 01 01 ff"), "state frame: byte 9: op 1: key 1 is not valid UTF-8"},
		{"second key not UTF-8", h(t, d41, "01 02 00 02 01 61 02 c3 28"), "state frame: byte 11: op 1: key 2 is not valid UTF-8"},
		{"key a surrogate", h(t, d41, "01 02 00 01 03 ed a0 80"), "state frame: byte 9: op 1: key 1 is not valid UTF-8"},
		{"key overlong", h(t, d41, "01 02 00 01 02 c0 80"), "state frame: byte 9: op 1: key 1 is not valid UTF-8"},
		{"a path twice", h(t, d41, "02 02 00 01 01 61 02 01 00"), "state frame: byte 11: op 2: /a twice"},
		{"out of order", h(t, d41, "02 02 00 01 01 62 02 00 01 01 61"), "state frame: byte 11: op 2: /a comes before the previous op's /b (path order)"},
		{"bytewise order", h(t, d41, "02 02 00 01 01 61 02 00 01 01 41"), "state frame: byte 11: op 2: /A comes before the previous op's /a (path order)"},
		{"a path after its extension", h(t, d41, "03 01 00 01 01 61 05 01 01 01 01 62 01 02 01 00"), "state frame: byte 18: op 3: /a comes before the previous op's /a/b (path order)"},
		{"shared not all they share", h(t, d41, "02 02 00 02 01 61 01 62 02 00 02 01 61 01 63"), "state frame: byte 13: op 2: shared 0, but the path shares 1 keys with the previous op's /a/b"},
		{"pointer escapes", h(t, d41, "02 02 00 01 01 7e 02 00 01 01 2f"), "state frame: byte 11: op 2: /~1 comes before the previous op's /~0 (path order)"},
		{"no value", h(t, d41, "01 01 00 01 01 61"), "state frame: byte 11: truncated in the value tag"},
		{"value tag 6", h(t, d41, "01 01 00 01 01 61 06"), "state frame: byte 11: op 1: value tag 6 is not 0 to 5"},
		{"value tag 255", h(t, d41, "01 01 00 01 01 61 ff"), "state frame: byte 11: op 1: value tag 255 is not 0 to 5"},
		{"no integer", h(t, d41, "01 01 00 01 01 61 02"), "state frame: byte 12: truncated in the integer"},
		{"integer not minimal", h(t, d41, "01 01 00 01 01 61 02 80 00"), "state frame: byte 12: the integer is a varint that is not minimal"},
		{"integer of 9 bytes", h(t, d41, "01 01 00 01 01 61 02 ff ff ff ff ff ff ff ff 01"), "state frame: byte 12: the integer is a varint longer than 8 bytes"},
		{"integer 2^53 + 1", h(t, d41, "01 01 00 01 01 61 02", vhex(zigzag(MaxSafe+1))), "state frame: byte 12: op 1: an integer beyond ±2^53"},
		{"integer -2^53 - 1", h(t, d41, "01 01 00 01 01 61 02", vhex(zigzag(-MaxSafe-1))), "state frame: byte 12: op 1: an integer beyond ±2^53"},
		{"integer 2^56 - 1", h(t, d41, "01 01 00 01 01 61 02 ff ff ff ff ff ff ff 7f"), "state frame: byte 12: op 1: an integer beyond ±2^53"},
		{"float cut", h(t, d41, "01 01 00 01 01 61 03 40 0c"), "state frame: byte 12: truncated in the float64"},
		{"float NaN", h(t, d41, "01 01 00 01 01 61 03 7f f8 00 00 00 00 00 01"), "state frame: byte 12: op 1: a float64 that is not finite"},
		{"float +Inf", h(t, d41, "01 01 00 01 01 61 03 7f f0 00 00 00 00 00 00"), "state frame: byte 12: op 1: a float64 that is not finite"},
		{"float -Inf", h(t, d41, "01 01 00 01 01 61 03 ff f0 00 00 00 00 00 00"), "state frame: byte 12: op 1: a float64 that is not finite"},
		{"float 3.0", h(t, d41, "01 01 00 01 01 61 03 40 08 00 00 00 00 00 00"), "state frame: byte 12: op 1: an integral float64 within ±2^53 (it is an integer, tag 2)"},
		{"float -0", h(t, d41, "01 01 00 01 01 61 03 80 00 00 00 00 00 00 00"), "state frame: byte 12: op 1: an integral float64 within ±2^53 (it is an integer, tag 2)"},
		{"float 2^53", h(t, d41, "01 01 00 01 01 61 03 43 40 00 00 00 00 00 00"), "state frame: byte 12: op 1: an integral float64 within ±2^53 (it is an integer, tag 2)"},
		{"float -2^53", h(t, d41, "01 01 00 01 01 61 03 c3 40 00 00 00 00 00 00"), "state frame: byte 12: op 1: an integral float64 within ±2^53 (it is an integer, tag 2)"},
		{"string cut", h(t, d41, "01 01 00 01 01 61 04 05 61"), "state frame: byte 12: truncated in the string"},
		{"no string", h(t, d41, "01 01 00 01 01 61 04"), "state frame: byte 12: truncated in the string length"},
		{"string not UTF-8", h(t, d41, "01 01 00 01 01 61 04 02 c3 28"), "state frame: byte 12: op 1: the string is not valid UTF-8"},
		{"string a surrogate", h(t, d41, "01 01 00 01 01 61 04 03 ed b0 80"), "state frame: byte 12: op 1: the string is not valid UTF-8"},
		{"string beyond U+10FFFF", h(t, d41, "01 01 00 01 01 61 04 04 f4 90 80 80"), "state frame: byte 12: op 1: the string is not valid UTF-8"},
		{"REMOVE has no value", h(t, d41, "01 02 00 01 01 61 01"), "state frame: byte 11: trailing bytes after the last of count 1 ops"},
	}
}

type acceptCase struct {
	name string
	body []byte
	op   *Op // the one op, when there is one
}

// TestAccepts: the edges a decoder must take, each re-encoded to the same
// bytes.
func TestAccepts(t *testing.T) {
	for _, c := range acceptCases(t) {
		t.Run(c.name, func(t *testing.T) {
			f, err := Decode(c.body)
			if err != nil {
				t.Fatalf("Decode(% x): %v", c.body, err)
			}
			if c.op != nil && (len(f.Ops) != 1 || !reflect.DeepEqual(f.Ops[0], *c.op)) {
				t.Fatalf("ops %v, want %v", f.Ops, *c.op)
			}
			again, err := AppendFrame(nil, &f)
			if err != nil || !bytes.Equal(again, c.body) {
				t.Fatalf("AppendFrame = % x, %v; want % x", again, err, c.body)
			}
		})
	}
}

func acceptCases(t testing.TB) []acceptCase {
	return []acceptCase{
		{"integer 2^53", h(t, d41, "01 01 00 01 01 61 02", vhex(zigzag(MaxSafe))), &Op{Set, p("a"), Int(MaxSafe)}},
		{"integer -2^53", h(t, d41, "01 01 00 01 01 61 02", vhex(zigzag(-MaxSafe))), &Op{Set, p("a"), Int(-MaxSafe)}},
		{"integer -1", h(t, d41, "01 01 00 01 01 61 02 01"), &Op{Set, p("a"), Int(-1)}},
		{"float 2^53 + 2", h(t, d41, "01 01 00 01 01 61 03 43 40 00 00 00 00 00 01"), &Op{Set, p("a"), Number(MaxSafe + 2)}},
		{"float -0.5", h(t, d41, "01 01 00 01 01 61 03 bf e0 00 00 00 00 00 00"), &Op{Set, p("a"), Number(-0.5)}},
		{"float the least subnormal", h(t, d41, "01 01 00 01 01 61 03 00 00 00 00 00 00 00 01"), &Op{Set, p("a"), Number(math.SmallestNonzeroFloat64)}},
		{"float the largest", h(t, d41, "01 01 00 01 01 61 03 7f ef ff ff ff ff ff ff"), &Op{Set, p("a"), Number(math.MaxFloat64)}},
		{"false", h(t, d41, "01 01 00 01 01 61 00"), &Op{Set, p("a"), Bool(false)}},
		{"true", h(t, d41, "01 01 00 01 01 61 01"), &Op{Set, p("a"), Bool(true)}},
		{"empty string", h(t, d41, "01 01 00 01 01 61 04 00"), &Op{Set, p("a"), String("")}},
		{"empty key", h(t, d41, "01 02 00 01 00"), &Op{Remove, p(""), Value{}}},
		{"a BOM and NUL in a string", h(t, d41, "01 01 00 01 01 61 04 04 ef bb bf 00"), &Op{Set, p("a"), String("\uFEFF\x00")}},
		{"an astral key", h(t, d41, "01 02 00 01 04 f0 9f 8e ae"), &Op{Remove, p("🎮"), Value{}}},
		{"a path of 16 keys", h(t, d41, "01 02 00 10", strings.Repeat("01 61 ", 16)), &Op{Remove, Path(strings.Split(strings.Repeat("a", 16), "")), Value{}}},
		{"count 0", h(t, d41, "00"), nil},
		{"empty SNAPSHOT, empty room id, tick_hz 0", h(t, "01 01 00 00 00 00 00 00"), nil},
		{"continues", h(t, "01 02 01 29 2a 00"), nil},
		{"END with a message", h(t, "01 03 00 06 72 65 6d 6f 76 65 02 c3 a9"), nil},
		{"version 2^53", h(t, "01 02 00", vhex(MaxSafe-1), vhex(MaxSafe), "00"), nil},
		{"9 bytes of varint nowhere: 8-byte version", h(t, "01 02 00 00 ff ff ff ff ff ff ff 0f 00"), nil},
		{"extensions in order", h(t, d41, "03 01 00 01 01 61 05 01 01 01 01 62 01 02 00 01 01 62"), nil},
	}
}

// TestApplyRejects: a frame that decodes but does not apply, with its
// message; the state is left as it was.
func TestApplyRejects(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"a": int64(1), "t": map[string]any{"x": int64(1)}}
	}
	set := func(v Value, keys ...string) Op { return Op{Kind: Set, Path: p(keys...), Value: v} }
	rm := func(keys ...string) Op { return Op{Kind: Remove, Path: p(keys...)} }
	cases := []struct {
		name string
		ops  []Op
		want string
	}{
		{"under a scalar", []Op{set(Int(2), "a", "b")}, "state frame: op 1 (SET /a/b): /a is not a table"},
		{"under a missing path", []Op{set(Int(2), "m", "b")}, "state frame: op 1 (SET /m/b): /m is not a table"},
		{"two down a missing path", []Op{rm("t", "m", "b")}, "state frame: op 1 (REMOVE /t/m/b): /t/m is not a table"},
		{"remove a missing path", []Op{rm("m")}, "state frame: op 1 (REMOVE /m): no such path"},
		{"remove a missing entry", []Op{rm("t", "y")}, "state frame: op 1 (REMOVE /t/y): no such path"},
		{"under a scalar set before", []Op{set(Int(1), "b"), set(Int(2), "b", "c")}, "state frame: op 2 (SET /b/c): /b is not a table"},
		{"under a table made a scalar", []Op{set(Int(1), "t"), rm("t", "x")}, "state frame: op 2 (REMOVE /t/x): /t is not a table"},
		{"under a removed path", []Op{rm("t"), set(Int(2), "t", "x")}, "state frame: op 2 (SET /t/x): /t is not a table"},
		{"remove in a new table", []Op{set(Table(), "t"), rm("t", "x")}, "state frame: op 2 (REMOVE /t/x): no such path"},
		{"two down a new table", []Op{set(Table(), "t"), set(Int(1), "t", "x", "y")}, "state frame: op 2 (SET /t/x/y): /t/x is not a table"},
		{"the last op fails", []Op{set(Int(5), "a"), set(Table(), "b"), set(Int(1), "t", "x"), rm("z")}, "state frame: op 4 (REMOVE /z): no such path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree := base()
			err := Apply(tree, c.ops)
			if fe, ok := err.(*FrameError); !ok || fe.Error() != c.want {
				t.Fatalf("Apply: %v, want %q", err, c.want)
			}
			if !reflect.DeepEqual(tree, base()) {
				t.Fatalf("a failed Apply changed the state: %v", tree)
			}
		})
	}
}

// TestCheck: section 7.1's rules on a Go tree, with the runtime's messages.
func TestCheck(t *testing.T) {
	deep := map[string]any{}
	m := deep
	for i := 0; i < 17; i++ {
		n := map[string]any{}
		m["deep"] = n
		m = n
	}
	many := map[string]any{}
	for i := 0; i < 4097; i++ {
		many["k"+hex.EncodeToString([]byte{byte(i >> 8), byte(i)})] = true
	}
	cases := []struct {
		name string
		tree map[string]any
		want string
	}{
		{"NaN", map[string]any{"x": math.NaN()}, "room state: /x: NaN or an infinity cannot be synced"},
		{"infinity", map[string]any{"p": map[string]any{"x": math.Inf(-1)}}, "room state: /p/x: NaN or an infinity cannot be synced"},
		{"a string not UTF-8", map[string]any{"name": "\xff"}, "room state: /name: a string must be valid UTF-8"},
		{"a long string", map[string]any{"log": strings.Repeat("x", 4097)}, "room state: /log: a string longer than 4096 bytes cannot be synced"},
		{"an empty key", map[string]any{"t": map[string]any{"": 1}}, `room state: /t: key "": a key is 1 to 64 bytes`},
		{"a long key", map[string]any{strings.Repeat("k", 65): 1}, `room state: : key "` + strings.Repeat("k", 65) + `": a key is 1 to 64 bytes`},
		{"a key not UTF-8", map[string]any{"t": map[string]any{"\xc3": 1}}, `room state: /t: key "\xc3": a key must be valid UTF-8`},
		{"a Go type", map[string]any{"f": func() {}}, "room state: /f: a func() cannot be synced"},
		{"a slice", map[string]any{"a/b": []int{1}}, "room state: /a~1b: a []int cannot be synced"},
		{"too deep", deep, "room state: /deep/...: deeper than 16 levels"},
		{"too many values", many, "room state: more than 4096 values (room.max_state_values)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Check(c.tree, 4096); err == nil || err.Error() != c.want {
				t.Fatalf("Check: %v\nwant %q", err, c.want)
			}
		})
	}
	ok := map[string]any{"a": 1, "b": int64(2), "c": 2.5, "d": "x", "e": true, "f": map[string]any{}, "g": strings.Repeat("x", 4096), strings.Repeat("k", 64): 1.0}
	if err := Check(ok, 8); err != nil {
		t.Fatalf("Check(%v): %v", ok, err)
	}
}

// TestEncodeRefuses: what AppendFrame and AppendDelta will not write,
// because a decoder would refuse it or it does not fit.
func TestEncodeRefuses(t *testing.T) {
	set := func(v Value, keys ...string) Op { return Op{Kind: Set, Path: p(keys...), Value: v} }
	cases := []struct {
		name string
		f    Frame
		want string
	}{
		{"out of order", Frame{Kind: DeltaFrame, Base: 1, Version: 2, Ops: []Op{set(Int(1), "b"), set(Int(1), "a")}}, "statesync: op 2: /a comes before the previous op's /b (path order)"},
		{"twice", Frame{Kind: DeltaFrame, Base: 1, Version: 2, Ops: []Op{set(Int(1), "a"), set(Int(1), "a")}}, "statesync: op 2: /a twice"},
		{"no keys", Frame{Kind: DeltaFrame, Base: 1, Version: 2, Ops: []Op{set(Int(1))}}, "statesync: op 1: a path of 0 keys: a path is 1 to 16 keys"},
		{"a key not UTF-8", Frame{Kind: DeltaFrame, Base: 1, Version: 2, Ops: []Op{set(Int(1), "a", "\xff")}}, "statesync: op 1: key 2 is not valid UTF-8"},
		{"NaN", Frame{Kind: DeltaFrame, Base: 1, Version: 2, Ops: []Op{set(Number(math.NaN()), "a")}}, "statesync: op 1: /a: NaN or an infinity cannot be synced"},
		{"no value", Frame{Kind: DeltaFrame, Base: 1, Version: 2, Ops: []Op{{Kind: Set, Path: p("a")}}}, "statesync: op 1: /a: a SET without a value"},
		{"an unknown op", Frame{Kind: DeltaFrame, Base: 1, Version: 2, Ops: []Op{{Kind: 3, Path: p("a")}}}, "statesync: op 1: op 3 is not SET or REMOVE"},
		{"a SNAPSHOT with a base", Frame{Kind: SnapshotFrame, Base: 1, Version: 2}, "statesync: a SNAPSHOT's base is 0, got 1"},
		{"a DELTA from its own version", Frame{Kind: DeltaFrame, Base: 2, Version: 2}, "statesync: a DELTA's base 2 is not below its version 2"},
		{"a version above 2^53", Frame{Kind: DeltaFrame, Base: 2, Version: MaxSafe + 1}, "statesync: version 9007199254740993 is above 2^53"},
		{"kind 4", Frame{Kind: 4}, "statesync: kind 4 is not a state frame's kind"},
		{"an END that continues", Frame{Kind: EndFrame, Continues: true}, "statesync: an END has no flags"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := AppendFrame(nil, &c.f); err == nil || err.Error() != c.want {
				t.Fatalf("AppendFrame: %v\nwant %q", err, c.want)
			}
		})
	}
	big := []Op{set(String(strings.Repeat("x", 100)), "a")}
	if _, err := AppendDelta(nil, 1, 2, big, 64); err == nil || err.Error() != "statesync: op 1 (/a) needs a frame of 113 bytes, above the limit of 64" {
		t.Fatalf("AppendDelta of an op over the limit: %v", err)
	}
	if _, err := AppendSnapshot(nil, strings.Repeat("r", 70), 20, 2, nil, 64); err == nil || err.Error() != "statesync: a SNAPSHOT's header is 77 bytes, no room for an op in the limit of 64" {
		t.Fatalf("AppendSnapshot with a header over the limit: %v", err)
	}
}

// TestEnd: AppendEnd makes any message a valid END within the limit.
func TestEnd(t *testing.T) {
	for _, c := range []struct {
		reason, message string
		limit           int
		wantMessage     string
	}{
		{"room_closed", "internal error (incident 0123456789abcdef)", 0, "internal error (incident 0123456789abcdef)"},
		{"removed", "bad\xffbyte", 0, "bad\uFFFDbyte"},
		{"removed", strings.Repeat("é", 10), 3 + 8 + 1 + 7, "ééé"},
		{"removed", "abc", 3 + 8 + 1, ""},
	} {
		body := AppendEnd(nil, c.reason, c.message, c.limit)
		f, err := Decode(body)
		if err != nil || f.Reason != c.reason || f.Message != c.wantMessage || (c.limit > 0 && len(body) > c.limit) {
			t.Fatalf("AppendEnd(%q, %q, %d) = % x: %+v, %v", c.reason, c.message, c.limit, body, f, err)
		}
	}
}

// TestNewView: room:view's argument errors, and the sorted key.
func TestNewView(t *testing.T) {
	many := make([]Path, 17)
	for i := range many {
		many[i] = p("k")
	}
	if _, err := NewView(many...); err == nil || err.Error() != "more than 16 prefixes" {
		t.Fatalf("17 prefixes: %v", err)
	}
	if _, err := NewView(p("a"), p()); err == nil || err.Error() != "prefix 2: a path is a string key or an array of 1 to 16 keys" {
		t.Fatalf("an empty prefix: %v", err)
	}
	if _, err := NewView(Path(make([]string, 17))); err == nil || err.Error() != "prefix 1: a path is a string key or an array of 1 to 16 keys" {
		t.Fatalf("a prefix of 17 keys: %v", err)
	}
	a, _ := NewView(p("public"), p("hand", "alice"), p("public"))
	b, _ := NewView(p("hand", "alice"), p("public"))
	c, _ := NewView(p("hand", "bob"), p("public"))
	none, _ := NewView()
	if a.Key() != b.Key() || a.Key() == c.Key() || none.Key() == All.Key() || !All.IsAll() || none.IsAll() {
		t.Fatalf("keys: %q %q %q %q %q", a.Key(), b.Key(), c.Key(), none.Key(), All.Key())
	}
	if got := none.Tree(goldenState41()); len(got) != 0 {
		t.Fatalf("a view of nothing sees %v", got)
	}
}
