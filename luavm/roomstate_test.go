package luavm

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
)

// roomStateL is a fresh Lua state with the globals the walk cases use:
// null (shield.null), ud (a plain userdata), ch (a channel) and client (a
// client userdata).
func roomStateL(t testing.TB) *lua.LState {
	t.Helper()
	L := lua.NewState()
	t.Cleanup(L.Close)
	L.SetGlobal("null", codec.Null(L))
	L.SetGlobal("ud", L.NewUserData())
	L.SetGlobal("ch", lua.LChannel(make(chan lua.LValue)))
	cv := &clientValue{}
	cv.ud.Value = cv
	L.SetGlobal("client", &cv.ud)
	return L
}

// roomStateTable runs src, a chunk that returns a table, in L.
func roomStateTable(t testing.TB, L *lua.LState, src string) *lua.LTable {
	t.Helper()
	if err := L.DoString(src); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	tb, ok := L.Get(-1).(*lua.LTable)
	L.Pop(1)
	if !ok {
		t.Fatalf("%s: returned no table", src)
	}
	return tb
}

// nestedSource is a state whose keys are keys, nesting tables, with leaf
// (Lua source) at the end.
func nestedSource(keys []string, leaf string) string {
	var b strings.Builder
	b.WriteString("return ")
	for _, k := range keys {
		fmt.Fprintf(&b, "{[%q]=", k)
	}
	b.WriteString(leaf)
	b.WriteString(strings.Repeat("}", len(keys)))
	return b.String()
}

// levels is n keys: first, then k2..kn.
func levels(first string, n int) []string {
	keys := []string{first}
	for i := 2; i <= n; i++ {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	return keys
}

// nestedTree is the tree nestedSource(keys, ...) walks to.
func nestedTree(keys []string, leaf any) map[string]any {
	v := leaf
	for i := len(keys) - 1; i >= 0; i-- {
		v = map[string]any{keys[i]: v}
	}
	return v.(map[string]any)
}

// TestRoomStateWalk walks Lua tables into trees under docs/rooms.md §7.1,
// each rule and message in turn.
func TestRoomStateWalk(t *testing.T) {
	cases := []struct {
		name   string
		src    string
		max    int  // room.max_state_values; 0 is 4096, -1 is 0
		noNull bool // walk without the shield.null sentinel
		want   map[string]any
		err    string
	}{
		// What a state may hold.
		{name: "empty", src: `return {}`, want: map[string]any{}},
		{name: "scalars", src: `return {b = true, f = false, s = "hi", e = "", n = 3, x = 1.5, neg = -7}`,
			want: map[string]any{"b": true, "f": false, "s": "hi", "e": "", "n": int64(3), "x": 1.5, "neg": int64(-7)}},
		{name: "nested maps", src: `return {players = {alice = {x = 1, y = 2.5, name = "Alice"}, bob = {}}, tick = 9}`,
			want: map[string]any{
				"players": map[string]any{"alice": map[string]any{"x": int64(1), "y": 2.5, "name": "Alice"}, "bob": map[string]any{}},
				"tick":    int64(9),
			}},
		{name: "integer keys", src: `return {[1] = "a", [2] = "b", [10] = "c", [-3] = "d", [0] = "z", [1000000] = "m", [2^53] = "max", [-2^53] = "min", [3.0] = "three"}`,
			want: map[string]any{"1": "a", "2": "b", "10": "c", "-3": "d", "0": "z", "1000000": "m", "9007199254740992": "max", "-9007199254740992": "min", "3": "three"}},
		{name: "array and fields", src: `return {"a", "b", x = 1}`,
			want: map[string]any{"1": "a", "2": "b", "x": int64(1)}},
		{name: "array with a hole", src: `local t = {1, 2, 3}; t[2] = nil; return t`,
			want: map[string]any{"1": int64(1), "3": int64(3)}},
		{name: "long array", src: `local t = {}; for i = 1, 100 do t[i] = i end; t.n = 100; return t`,
			want: func() map[string]any {
				m := map[string]any{"n": int64(100)}
				for i := 1; i <= 100; i++ {
					m[fmt.Sprint(i)] = int64(i)
				}
				return m
			}()},
		{name: "deleted keys", src: `local t = {a = 1, b = 2, c = 3}; t.b = nil; return t`,
			want: map[string]any{"a": int64(1), "c": int64(3)}},
		{name: "many keys", src: `local t = {}; for i = 1, 40 do t["k" .. i] = i end; return t`,
			want: func() map[string]any {
				m := map[string]any{}
				for i := 1; i <= 40; i++ {
					m[fmt.Sprint("k", i)] = int64(i)
				}
				return m
			}()},
		{name: "minus zero is zero", src: `local z = 0 / -1; assert(1 / z < 0); return {z = z}`,
			want: map[string]any{"z": int64(0)}},
		{name: "2^53 is an integer, 2^53+2 a float", src: `return {a = 2^53, b = -2^53, c = 2^53 + 2, d = -(2^53 + 2)}`,
			want: map[string]any{"a": int64(1 << 53), "b": int64(-1 << 53), "c": float64(1<<53 + 2), "d": -float64(1<<53 + 2)}},
		{name: "large floats", src: `return {a = 1e300, b = -1e300, c = 2^60, d = 5e-324}`,
			want: map[string]any{"a": 1e300, "b": -1e300, "c": float64(1 << 60), "d": 5e-324}},
		{name: "shared table twice", src: `local s = {x = 1, y = {z = "q"}}; return {a = s, b = s, c = {d = s}}`,
			want: map[string]any{
				"a": map[string]any{"x": int64(1), "y": map[string]any{"z": "q"}},
				"b": map[string]any{"x": int64(1), "y": map[string]any{"z": "q"}},
				"c": map[string]any{"d": map[string]any{"x": int64(1), "y": map[string]any{"z": "q"}}},
			}},
		{name: "16 levels", src: nestedSource(levels("deep", 16), "1"),
			want: nestedTree(levels("deep", 16), int64(1))},
		{name: "16 levels ending in a table", src: nestedSource(levels("deep", 16), "{}"),
			want: nestedTree(levels("deep", 16), map[string]any{})},
		{name: "4096-byte string", src: `return {s = string.rep("x", 4096)}`,
			want: map[string]any{"s": strings.Repeat("x", 4096)}},
		{name: "64-byte key and UTF-8", src: `return {[string.rep("k", 64)] = "é", ["é/~"] = 1}`,
			want: map[string]any{strings.Repeat("k", 64): "é", "é/~": int64(1)}},
		{name: "metatables ignored", src: `return setmetatable({a = 1}, {__index = {b = 2}, __newindex = function() error("no") end, __pairs = function() error("no") end})`,
			want: map[string]any{"a": int64(1)}},
		{name: "values at the limit", src: `return {a = 1, b = {c = 2}}`, max: 3,
			want: map[string]any{"a": int64(1), "b": map[string]any{"c": int64(2)}}},
		{name: "4096 values", src: `local t = {}; for i = 1, 4096 do t["k" .. i] = true end; return t`,
			want: func() map[string]any {
				m := map[string]any{}
				for i := 1; i <= 4096; i++ {
					m[fmt.Sprint("k", i)] = true
				}
				return m
			}()},

		// Values no state may hold.
		{name: "function", src: `return {players = {alice = {x = 1, cb = function() end}}}`,
			err: `room state: /players/alice/cb: a function cannot be synced`},
		{name: "Go function", src: `return {f = print}`,
			err: `room state: /f: a function cannot be synced`},
		{name: "coroutine", src: `return {co = coroutine.create(function() end)}`,
			err: `room state: /co: a coroutine cannot be synced`},
		{name: "userdata", src: `return {u = ud}`,
			err: `room state: /u: a userdata cannot be synced`},
		{name: "channel", src: `return {c = ch}`,
			err: `room state: /c: a channel cannot be synced`},
		{name: "client", src: `return {who = {client}}`,
			err: `room state: /who/1: a client cannot be synced`},
		{name: "shield.null", src: `return {a = null}`,
			err: `room state: /a: shield.null cannot be synced: set the key to nil to remove it`},
		{name: "shield.null without the sentinel", src: `return {a = null}`, noNull: true,
			err: `room state: /a: a userdata cannot be synced`},
		{name: "NaN", src: `return {x = 0/0}`,
			err: `room state: /x: NaN or an infinity cannot be synced`},
		{name: "infinity", src: `return {x = 1/0}`,
			err: `room state: /x: NaN or an infinity cannot be synced`},
		{name: "minus infinity", src: `return {p = {x = -1/0}}`,
			err: `room state: /p/x: NaN or an infinity cannot be synced`},
		{name: "string not UTF-8", src: `return {name = "\195"}`,
			err: `room state: /name: a string must be valid UTF-8`},
		{name: "string too long", src: `return {log = string.rep("x", 4097)}`,
			err: `room state: /log: a string longer than 4096 bytes cannot be synced`},

		// Keys.
		{name: "boolean key", src: `return {t = {[true] = 1}}`,
			err: `room state: /t: key true: keys must be strings or integers`},
		{name: "float key", src: `return {t = {[1.5] = 1}}`,
			err: `room state: /t: key 1.5: keys must be strings or integers`},
		{name: "integer key beyond 2^53", src: `return {t = {[2^53 + 2] = 1}}`,
			err: `room state: /t: key 9007199254740994: keys must be strings or integers`},
		{name: "infinite key", src: `return {t = {[1/0] = 1}}`,
			err: `room state: /t: key +Inf: keys must be strings or integers`},
		{name: "table key", src: `return {t = {[{}] = 1}}`,
			err: `room state: /t: key a table: keys must be strings or integers`},
		{name: "function key", src: `return {t = {[print] = 1}}`,
			err: `room state: /t: key a function: keys must be strings or integers`},
		{name: "bad key at the root", src: `return {[false] = 1}`,
			err: `room state: : key false: keys must be strings or integers`},
		{name: "keys 1 and \"1\"", src: `return {t = {[1] = "a", ["1"] = "b"}}`,
			err: `room state: /t: keys 1 and "1" are one key on the wire`},
		{name: "keys 1 and \"1\", string first", src: `local t = {}; t["1"] = "b"; t[1] = "a"; return {t = t}`,
			err: `room state: /t: keys 1 and "1" are one key on the wire`},
		{name: "keys -5 and \"-5\" in the hash part", src: `return {t = {x = 1, [-5] = 2, ["-5"] = 3}}`,
			err: `room state: /t: keys -5 and "-5" are one key on the wire`},
		{name: "empty key", src: `return {t = {[""] = 1}}`,
			err: `room state: /t: key "": a key is 1 to 64 bytes`},
		{name: "65-byte key", src: `return {t = {[string.rep("k", 65)] = 1}}`,
			err: `room state: /t: key "` + strings.Repeat("k", 65) + `": a key is 1 to 64 bytes`},
		{name: "key not UTF-8", src: `return {t = {["\195"] = 1}}`,
			err: `room state: /t: key "\xc3": a key must be valid UTF-8`},

		// Shape.
		{name: "cycle", src: `local t = {a = {}}; t.a.b = t.a; return t`,
			err: `room state: /a/b: a table that contains itself (also at /a)`},
		{name: "cycle through the root", src: `local t = {x = {}}; t.x.y = {up = t}; return t`,
			err: `room state: /x/y/up: a table that contains itself (also at the root)`},
		{name: "17 levels", src: nestedSource(levels("deep", 17), "1"),
			err: `room state: /deep/...: deeper than 16 levels`},
		{name: "17 levels, escaped", src: nestedSource(levels("a/b~c", 17), "{}"),
			err: `room state: /a~1b~0c/...: deeper than 16 levels`},
		{name: "escaped pointer", src: `return {["a/b"] = {["c~d"] = print}}`,
			err: `room state: /a~1b/c~0d: a function cannot be synced`},
		{name: "too many values", src: `return {a = 1, b = {c = 2, d = 3}}`, max: 3,
			err: `room state: more than 3 values (room.max_state_values)`},
		{name: "4097 values", src: `local t = {}; for i = 1, 4097 do t["k" .. i] = true end; return t`,
			err: `room state: more than 4096 values (room.max_state_values)`},
		{name: "count in a big table", src: `local t = {}; for i = 1, 1000 do t["k" .. i] = i end; return t`, max: 10,
			err: `room state: more than 10 values (room.max_state_values)`},
		{name: "no values allowed", src: `return {a = 1}`, max: -1,
			err: `room state: more than 0 values (room.max_state_values)`},
		{name: "shared table counted twice", src: `local s = {x = 1}; return {a = s, b = s}`, max: 3,
			err: `room state: more than 3 values (room.max_state_values)`},

		// Several problems: the first in path order.
		{name: "first in key order", src: `local t = {}; t.z = print; t.m = ud; t.a = coroutine.create(print); return t`,
			err: `room state: /a: a coroutine cannot be synced`},
		{name: "first among many keys", src: `local t = {}; for i = 40, 10, -1 do t["k" .. i] = print end; t.k1 = 0/0; return t`,
			err: `room state: /k1: NaN or an infinity cannot be synced`},
		{name: "value before count", src: `return {b = 1, a = print, c = 2}`, max: 2,
			err: `room state: /a: a function cannot be synced`},
		{name: "count before value", src: `return {a = 1, b = 2, c = print}`, max: 2,
			err: `room state: more than 2 values (room.max_state_values)`},
		{name: "key before later values", src: `return {z = print, [true] = 1}`,
			err: `room state: : key true: keys must be strings or integers`},
		{name: "value before later keys", src: `return {a = print, [true] = 1}`,
			err: `room state: /a: a function cannot be synced`},
		{name: "integer keys sort as strings", src: `return {[10] = print, [9] = ud}`,
			err: `room state: /10: a function cannot be synced`},
		{name: "table before its entries' path", src: `return {a = {[""] = 1}, b = print}`,
			err: `room state: /a: key "": a key is 1 to 64 bytes`},
		{name: "deep before a later sibling", src: `local t = ` + strings.TrimPrefix(nestedSource(levels("a", 17), "1"), "return ") + `; t.b = print; return t`,
			err: `room state: /a/...: deeper than 16 levels`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			L := roomStateL(t)
			root := roomStateTable(t, L, c.src)
			max := c.max
			switch max {
			case -1:
				max = 0
			case 0:
				max = 4096
			}
			var null lua.LValue
			if !c.noNull {
				null = codec.Null(L)
			}
			// Several walks: the message must not depend on an order a
			// table's hash part happens to have.
			for range 5 {
				tree, err := walkState(root, max, null)
				if c.err != "" {
					if err == nil || err.Error() != c.err {
						t.Fatalf("error %v, want %s", err, c.err)
					}
					if tree != nil {
						t.Fatalf("a tree with the error: %v", tree)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(tree, c.want) {
					t.Fatalf("tree\n %#v\nwant\n %#v", tree, c.want)
				}
			}
		})
	}
}

// TestRoomStateWalkOutlivesLua: the tree's strings and floats stay right
// once the Lua state is gone and the collector has run: the tree is kept
// from tick to tick, so it must hold nothing the Lua state owns.
func TestRoomStateWalkOutlivesLua(t *testing.T) {
	L := lua.NewState()
	root := roomStateTable(t, L, `local t = {}
		for i = 1, 50 do t["k" .. i] = {s = string.rep("ab", i) .. i, f = i + 0.5, big = 2^60 * i} end
		return t`)
	tree, err := walkState(root, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := walkState(root, math.MaxInt, nil); err != nil {
		t.Fatal(err)
	}
	L.Close()
	root, L = nil, nil
	var junk [][]byte
	for range 5 {
		runtime.GC()
		for range 1000 {
			junk = append(junk, bytes.Repeat([]byte{0xff}, 64))
		}
	}
	_ = junk
	for i := 1; i <= 50; i++ {
		e := tree[fmt.Sprint("k", i)].(map[string]any)
		if s := strings.Repeat("ab", i) + fmt.Sprint(i); e["s"] != s {
			t.Fatalf("k%d.s = %q, want %q", i, e["s"], s)
		}
		if e["f"] != float64(i)+0.5 || e["big"] != float64(1<<60)*float64(i) {
			t.Fatalf("k%d = %v", i, e)
		}
	}
}

// TestRoomStateWalkSharedCopies: a table reachable twice is synced by
// value, as two maps.
func TestRoomStateWalkSharedCopies(t *testing.T) {
	L := roomStateL(t)
	tree, err := walkState(roomStateTable(t, L, `local s = {x = 1}; return {a = s, b = s}`), 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := tree["a"].(map[string]any), tree["b"].(map[string]any)
	a["x"] = int64(2)
	if b["x"] != int64(1) {
		t.Fatal("the two copies share a map")
	}
}

// BenchmarkWalkState walks a 20-field state: a few room fields and three
// players of four fields each, as a tick does.
func BenchmarkWalkState(b *testing.B) {
	L := roomStateL(b)
	root := roomStateTable(b, L, `return {
		phase = "play", round = 3, paused = false, seed = 12345.5,
		players = {
			alice = {x = 10.5, y = 20.25, hp = 100, name = "Alice"},
			bob   = {x = 1.5, y = 2.75, hp = 80, name = "Bob"},
			carol = {x = -4.5, y = 0.125, hp = 95, name = "Carol"},
		},
	}`)
	if _, err := walkState(root, 4096, codec.Null(L)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := walkState(root, 4096, nil); err != nil {
			b.Fatal(err)
		}
	}
}
