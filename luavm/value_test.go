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
// as shield.call does, and compares their JSON and shape.
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
		{"mixed keys", `{1, 2, x = "y", [10] = "ten", [true] = "t", [2.5] = "f"}`, `v[1] == 1 and v[2] == 2 and v.x == "y" and v[10] == "ten" and v[true] == "t" and v[2.5] == "f"`},
		{"a hole", `{1, nil, 3}`, `v[1] == 1 and v[2] == nil and v[3] == 3`},
		{"keys set out of order", `(function() local t = {} t[3] = "c" t[1] = "a" t[2] = "b" return t end)()`, `v[1] == "a" and v[2] == "b" and v[3] == "c"`},
		{"null inside", `{null, a = null}`, `v[1] == null and v.a == null`},
		{"shared subtable is copied", `(function() local s = {1} return {s, s} end)()`, `v[1][1] == 1 and v[2][1] == 1 and v[1] ~= v[2]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			from, to := lua.NewState(), lua.NewState()
			defer from.Close()
			defer to.Close()
			gv, err := luavm.ToGo(from, eval(t, from, c.expr))
			if err != nil {
				t.Fatal(err)
			}
			eval(t, to, "nil") // installs null and array in to
			to.SetGlobal("v", luavm.ToLua(to, gv))
			if ok := eval(t, to, c.check); ok != lua.LTrue {
				t.Fatalf("%s: check %s failed", c.expr, c.check)
			}
		})
	}
}

func TestValueErrors(t *testing.T) {
	for _, c := range []struct{ name, expr, err string }{
		{"function", `print`, "function cannot leave"},
		{"function inside", `{f = print}`, "function cannot leave"},
		{"coroutine", `coroutine.create(print)`, "thread cannot leave"},
		{"table key", `{[{}] = 1}`, "key of type table"},
		{"cycle", `(function() local t = {} t.t = t return t end)()`, "nested deeper"},
		{"too deep", `(function() local t = {} for i = 1, 100 do t = {t} end return t end)()`, "nested deeper"},
		{"a shared table 2^30 times", `(function() local t = {} for i = 1, 30 do t = {t, t} end return t end)()`, "values in one copy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := lua.NewState()
			defer L.Close()
			_, err := luavm.ToGo(L, eval(t, L, c.expr))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
	// Another VM's null is userdata to this one.
	a, b := lua.NewState(), lua.NewState()
	defer a.Close()
	defer b.Close()
	if _, err := luavm.ToGo(b, codec.Null(a)); err == nil {
		t.Fatal("a foreign null left the VM")
	}
}
