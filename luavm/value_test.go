package luavm_test

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/luavm"
)

// eval runs `return <expr>` in L.
func eval(t *testing.T, L *lua.LState, expr string) lua.LValue {
	t.Helper()
	L.SetGlobal("null", codec.Null(L))
	L.SetGlobal("array", L.NewFunction(func(L *lua.LState) int {
		tb := L.CheckTable(1)
		if err := codec.MarkArray(L, tb); err != nil {
			L.RaiseError("%v", err)
		}
		L.Push(tb)
		return 1
	}))
	if err := L.DoString("return " + expr); err != nil {
		t.Fatal(err)
	}
	v := L.Get(-1)
	L.Pop(1)
	return v
}

// TestValueCrossesVMs copies values out of one Lua state and into another,
// as shield.call does: under the JSON <-> Lua mapping (SPEC §8), so a
// table with keys other than 1..n arrives with string keys.
func TestValueCrossesVMs(t *testing.T) {
	for _, c := range []struct{ name, expr, check string }{
		{"nil", `nil`, `v == nil`},
		{"bool", `false`, `v == false`},
		{"integer", `42`, `v == 42`},
		{"float", `-0.25`, `v == -0.25`},
		{"string with zero bytes", `"a\0b"`, `v == "a\0b" and #v == 3`},
		{"null", `null`, `v == null`},
		{"sequence", `{1, "two", true}`, `#v == 3 and v[2] == "two"`},
		{"marked empty array", `array({})`, `getmetatable(v) == "shield.array" and next(v) == nil`},
		{"unmarked empty table", `{}`, `getmetatable(v) == nil and next(v) == nil`},
		{"marked array", `array({1, 2})`, `getmetatable(v) == "shield.array" and v[2] == 2`},
		{"object", `{a = 1, b = {c = "d"}}`, `v.a == 1 and v.b.c == "d"`},
		{"mixed keys become strings", `{1, 2, x = "y", [10] = "ten"}`, `v["1"] == 1 and v["2"] == 2 and v.x == "y" and v["10"] == "ten" and v[1] == nil`},
		{"keys set out of order", `(function() local t = {} t[3] = "c" t[1] = "a" t[2] = "b" return t end)()`, `v[1] == "a" and v[2] == "b" and v[3] == "c"`},
		{"null inside", `{null, a = null}`, `v["1"] == null and v.a == null`},
		{"shared subtable is copied", `(function() local s = {1} return {s, s} end)()`, `v[1][1] == 1 and v[2][1] == 1 and v[1] ~= v[2]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			from, to := lua.NewState(), lua.NewState()
			defer from.Close()
			defer to.Close()
			b, err := luavm.EncodeValue(from, eval(t, from, c.expr))
			if err != nil {
				t.Fatal(err)
			}
			eval(t, to, "nil") // installs null and array in to
			v, err := luavm.DecodeValue(to, b)
			if err != nil {
				t.Fatal(err)
			}
			to.SetGlobal("v", v)
			if ok := eval(t, to, c.check); ok != lua.LTrue {
				t.Fatalf("%s: check %s failed (copied as %s)", c.expr, c.check, b)
			}
		})
	}
}

func TestValueErrors(t *testing.T) {
	for _, c := range []struct{ name, expr, err string }{
		{"function", `print`, "function"},
		{"function inside", `{f = print}`, "function"},
		{"coroutine", `coroutine.create(print)`, "thread"},
		{"table key", `{[{}] = 1}`, "key"},
		{"boolean key", `{[true] = 1}`, "key"},
		{"cycle", `(function() local t = {} t.t = t return t end)()`, "itself"},
		{"too deep", `(function() local t = {} for i = 1, 300 do t = {t} end return t end)()`, "deep"},
		{"a shared table 2^30 times", `(function() local t = {} for i = 1, 30 do t = {t, t} end return t end)()`, "exceeds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := lua.NewState()
			defer L.Close()
			codec.SetMaxEncodeBytes(L, 1<<20)
			_, err := luavm.EncodeValue(L, eval(t, L, c.expr))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
	// Another VM's null is userdata to this one.
	a, b := lua.NewState(), lua.NewState()
	defer a.Close()
	defer b.Close()
	if _, err := luavm.EncodeValue(b, codec.Null(a)); err == nil {
		t.Fatal("a foreign null left the VM")
	}
}
