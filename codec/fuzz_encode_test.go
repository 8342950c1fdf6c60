package codec

import (
	"math"
	"slices"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// FuzzAppendJSON builds tables the way Lua code does (t[k] = v, deletions
// included, which leave holes and stale keys inside gopher-lua) and compares
// AppendJSON with refEncode, a slow encoder that sees tables only through
// ForEach. The encoder's array detection relies on gopher-lua's Len and Next;
// this checks it against the plain definition "keys exactly 1..n".
func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 1, 2, 0, 2, 3})
	f.Add([]byte{0, 0, 1, 0, 0, 255, 0, 1, 2})
	f.Add([]byte{0, 10, 5, 0, 11, 6, 0, 4, 7})
	f.Add([]byte{251, 0, 0, 1, 0, 252, 1, 3, 4})
	f.Add([]byte{0, 0, 253, 251, 0, 0, 1, 1, 253})
	f.Fuzz(func(t *testing.T, ops []byte) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		keys := []lua.LValue{
			lua.LNumber(1), lua.LNumber(2), lua.LNumber(3), lua.LNumber(4), lua.LNumber(0),
			lua.LNumber(-1), lua.LNumber(1.5), lua.LNumber(1 << 53), lua.LNumber(1e21),
			lua.LNumber(1 << 30), lua.LString("a"), lua.LString("1"), lua.LString("b\xff"),
			lua.LTrue, lua.LNumber(5), lua.LNumber(6),
		}
		tables := []*lua.LTable{L.NewTable()}
		value := func(b byte) lua.LValue {
			switch {
			case b == 255:
				return lua.LNil // a deletion
			case b == 254:
				return Null(L)
			case b == 253:
				return lua.LNumber(math.Inf(1))
			case b >= 240:
				return tables[int(b)%len(tables)] // may close a cycle
			case b >= 200:
				return lua.LString([]string{"x", "é", "\xff", "<&>", "\n"}[b%5])
			default:
				return lua.LNumber(float64(b) / 4)
			}
		}
		for i := 0; i+2 < len(ops) && len(tables) < 16; i += 3 {
			tb := tables[int(ops[i])%len(tables)]
			switch ops[i+1] {
			case 251:
				nt := L.CreateTable(0, 0)
				tables = append(tables, nt)
				tb.RawSet(keys[int(ops[i+2])%len(keys)], nt)
			case 252:
				_ = MarkArray(L, tb)
			default:
				tb.RawSet(keys[int(ops[i+1])%len(keys)], value(ops[i+2]))
			}
		}

		got, err := AppendJSON(nil, L, tables[0])
		want, ok := refEncode(L, tables[0], nil)
		if (err == nil) != ok {
			t.Fatalf("AppendJSON = %q, %v; reference ok = %v, %q", got, err, ok, want)
		}
		if ok && string(got) != want {
			t.Fatalf("AppendJSON = %s, reference %s", got, want)
		}
	})
}

// refEncode is the package comment's encoding rules written as plainly as
// possible. It reports only whether encoding fails, not why.
func refEncode(L *lua.LState, v lua.LValue, path []*lua.LTable) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		b, ok := appendString(nil, string(v))
		return string(b), ok
	case lua.LNumber:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return "", false
		}
		return string(appendNumber(nil, float64(v))), true
	case *lua.LTable:
		if slices.Contains(path, v) || len(path) >= MaxDepth {
			return "", false
		}
		path = append(path, v)
		var keys []lua.LValue
		v.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
		isSeq := len(keys) > 0
		for _, k := range keys {
			n, ok := k.(lua.LNumber)
			isSeq = isSeq && ok && n == lua.LNumber(math.Trunc(float64(n))) && n >= 1 && n <= lua.LNumber(len(keys))
		}
		if IsArray(L, v) || isSeq {
			n := len(keys)
			if IsArray(L, v) {
				n = v.Len()
			}
			var parts []string
			for i := 1; i <= n; i++ {
				s, ok := refEncode(L, v.RawGetInt(i), path)
				if !ok {
					return "", false
				}
				parts = append(parts, s)
			}
			return "[" + strings.Join(parts, ",") + "]", true
		}
		type entry struct{ k, v string }
		var entries []entry
		for _, k := range keys {
			var ks string
			switch k := k.(type) {
			case lua.LString:
				ks = string(k)
			case lua.LNumber:
				if float64(k) != math.Trunc(float64(k)) || math.Abs(float64(k)) >= 1e21 {
					return "", false
				}
				ks = string(appendNumber(nil, float64(k)))
			default:
				return "", false
			}
			kj, ok := appendString(nil, ks)
			vj, ok2 := refEncode(L, v.RawGet(k), path)
			if !ok || !ok2 {
				return "", false
			}
			entries = append(entries, entry{ks, string(kj) + ":" + vj})
		}
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.k, b.k) })
		var parts []string
		for i, e := range entries {
			if i > 0 && e.k == entries[i-1].k {
				return "", false
			}
			parts = append(parts, e.v)
		}
		return "{" + strings.Join(parts, ",") + "}", true
	default:
		if IsNull(L, v) || v == lua.LNil {
			return "null", true
		}
		return "", false
	}
}
