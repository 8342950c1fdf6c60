package codec

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// newState returns a fresh VM, closed when the test ends, with the globals
// the runtime will provide as shield.null and shield.array installed as
// `null` and `array`.
func newState(t testing.TB) *lua.LState {
	t.Helper()
	L := lua.NewState()
	t.Cleanup(L.Close)
	L.SetGlobal("null", Null(L))
	L.SetGlobal("array", L.NewFunction(func(L *lua.LState) int {
		tb := L.CheckTable(1)
		if err := MarkArray(L, tb); err != nil {
			L.RaiseError("%v", err)
		}
		L.Push(tb)
		return 1
	}))
	return L
}

// eval runs `return <expr>` in L and returns the value.
func eval(t testing.TB, L *lua.LState, expr string) lua.LValue {
	t.Helper()
	if err := L.DoString("return " + expr); err != nil {
		t.Fatalf("lua %q: %v", expr, err)
	}
	v := L.Get(-1)
	L.Pop(1)
	return v
}

// show renders a decoded value so tests can tell every distinction the
// codec makes: strings are quoted (a big integer is "9007199254740993", a
// number 9007199254740992), marked arrays are [..], other tables {k=v,..}
// with keys sorted, and shield.null is null.
func show(L *lua.LState, v lua.LValue) string {
	var b strings.Builder
	writeShow(&b, L, v)
	return b.String()
}

func writeShow(b *strings.Builder, L *lua.LState, v lua.LValue) {
	switch v := v.(type) {
	case lua.LString:
		b.WriteString(strconv.Quote(string(v)))
	case lua.LNumber:
		b.WriteString(strconv.FormatFloat(float64(v), 'f', -1, 64))
	case *lua.LTable:
		if IsArray(L, v) {
			b.WriteByte('[')
			for i := 1; i <= v.Len(); i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				writeShow(b, L, v.RawGetInt(i))
			}
			b.WriteByte(']')
			return
		}
		type kv struct{ k, v string }
		var entries []kv
		v.ForEach(func(k, val lua.LValue) {
			entries = append(entries, kv{show(L, k), show(L, val)})
		})
		slices.SortFunc(entries, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		b.WriteByte('{')
		for i, e := range entries {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(e.k + "=" + e.v)
		}
		b.WriteByte('}')
	default:
		if IsNull(L, v) {
			b.WriteString("null")
			return
		}
		b.WriteString(v.String())
	}
}
