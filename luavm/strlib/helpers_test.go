package strlib

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// newState returns a VM with the base and table libraries and this
// package's string library under lim.
func newState(tb testing.TB, lim Limits) *lua.LState {
	tb.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	tb.Cleanup(L.Close)
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenTable} {
		L.Push(L.NewFunction(open))
		L.Call(0, 0)
	}
	Open(L, lim)
	return L
}

// newOriginal returns a VM with gopher-lua's own string library, the
// reference of the differential tests.
func newOriginal(tb testing.TB) *lua.LState {
	tb.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	tb.Cleanup(L.Close)
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenTable, lua.OpenString} {
		L.Push(L.NewFunction(open))
		L.Call(0, 0)
	}
	return L
}

// errGoPanic marks a Go panic (an index out of range, a nil map) that
// gopher-lua's PCall turned into an error: never an acceptable outcome,
// even where a Lua error is expected.
var errGoPanic = errors.New("go panic inside the library")

// callString calls string.<name>(args...) in L and returns every result,
// or the error it raised.
func callString(L *lua.LState, name string, args ...lua.LValue) ([]lua.LValue, error) {
	fn := L.GetField(L.GetGlobal("string"), name)
	return callFn(L, fn, args...)
}

func callFn(L *lua.LState, fn lua.LValue, args ...lua.LValue) ([]lua.LValue, error) {
	top := L.GetTop()
	defer L.SetTop(top)
	if err := L.CallByParam(lua.P{Fn: fn, NRet: lua.MultRet, Protect: true}, args...); err != nil {
		if apiErr, ok := err.(*lua.ApiError); ok && apiErr.Type == lua.ApiErrorPanic {
			return nil, fmt.Errorf("%w: %v", errGoPanic, err)
		}
		return nil, err
	}
	out := make([]lua.LValue, 0, L.GetTop()-top)
	for i := top + 1; i <= L.GetTop(); i++ {
		out = append(out, L.Get(i))
	}
	return out, nil
}

// gmatchAll runs string.gmatch(s, pat) to the end (at most limit steps)
// and returns each step's results.
func gmatchAll(L *lua.LState, s, pat string, limit int) ([][]lua.LValue, error) {
	it, err := callString(L, "gmatch", lua.LString(s), lua.LString(pat))
	if err != nil {
		return nil, err
	}
	// gopher-lua's gmatch returns its state as a second value, for the
	// generic for to pass back; this package's returns only the function.
	var steps [][]lua.LValue
	for range limit {
		vals, err := callFn(L, it[0], it[1:]...)
		if err != nil {
			return nil, err
		}
		if len(vals) == 0 || vals[0] == lua.LNil {
			break
		}
		steps = append(steps, vals)
	}
	return steps, nil
}

// show renders values for comparisons and failure messages, with types,
// so that the string "1" and the number 1 differ.
func show(vals []lua.LValue) string {
	// match returned nothing in gopher-lua where Lua returns nil; both
	// mean "no match" to a caller, so they compare equal.
	if len(vals) == 0 {
		return "nil"
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case lua.LString:
			parts[i] = quoteBytes(string(v))
		case lua.LNumber:
			parts[i] = "n" + v.String()
		default:
			parts[i] = v.Type().String()
		}
	}
	return strings.Join(parts, ",")
}

func showSteps(steps [][]lua.LValue) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = "[" + show(s) + "]"
	}
	return strings.Join(parts, "")
}

// luaArgs converts Go values to Lua arguments: nil stays absent at the end
// but nil in the middle is a Lua nil.
func luaArgs(args ...any) []lua.LValue {
	out := make([]lua.LValue, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case nil:
			out[i] = lua.LNil
		case string:
			out[i] = lua.LString(a)
		case int:
			out[i] = lua.LNumber(a)
		case float64:
			out[i] = lua.LNumber(a)
		case bool:
			out[i] = lua.LBool(a)
		case lua.LValue:
			out[i] = a
		default:
			panic(fmt.Sprintf("luaArgs: %T", a))
		}
	}
	for len(out) > 0 && out[len(out)-1] == lua.LNil {
		out = out[:len(out)-1]
	}
	return out
}

// doString runs code in L and fails the test on error.
func doString(tb testing.TB, L *lua.LState, code string) {
	tb.Helper()
	if err := L.DoString(code); err != nil {
		tb.Fatalf("DoString(%q): %v", code, err)
	}
}

// quoteBytes renders s byte by byte: printable ASCII as is, '"' and '\\'
// escaped, any other byte as \xNN, so that expected values in tables say
// exactly which bytes they mean.
func quoteBytes(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
