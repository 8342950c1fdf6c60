package luavm

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
)

// Value is a Lua value as plain Go data, the form in which arguments and
// results cross from one VM to another (two VMs share no Lua objects, and a
// later step carries calls between nodes). It is one of: nil, bool,
// float64, string, Null, or *Table.
type Value = any

// Null is shield.null as plain data.
type Null struct{}

// Table is a Lua table as plain data. Array holds t[1..n]; Hash holds every
// other key, whose type is string, float64 or bool.
type Table struct {
	Array   []Value
	Hash    []Pair
	IsArray bool // marked with shield.array or decoded from a JSON array
}

// Pair is one non-sequence entry of a Table.
type Pair struct {
	Key Value
	Val Value
}

// maxValueDepth bounds nesting when copying values between VMs, so that a
// cyclic table is an error instead of a stack overflow.
const maxValueDepth = 64

// maxValueCount bounds the values one copy makes. A table referenced twice
// is copied twice, so without it thirty lines of Lua (t = {t, t}, thirty
// times) would ask for 2^30 copies and take the process down.
const maxValueCount = 1 << 20

// ToGo copies a Lua value out of its VM. Functions, coroutines and userdata
// (other than shield.null) cannot leave a VM and are an error.
func ToGo(L *lua.LState, v lua.LValue) (Value, error) {
	budget := maxValueCount
	return toGo(L, v, 0, &budget)
}

func toGo(L *lua.LState, v lua.LValue, depth int, budget *int) (Value, error) {
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("more than %d values in one copy", maxValueCount)
	}
	switch v := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LNumber:
		return float64(v), nil
	case lua.LString:
		return string(v), nil
	case *lua.LTable:
		if depth >= maxValueDepth {
			return nil, fmt.Errorf("table nested deeper than %d levels (a cycle?)", maxValueDepth)
		}
		t := &Table{IsArray: codec.IsArray(L, v)}
		n := v.Len()
		if n > 0 {
			t.Array = make([]Value, 0, n)
		}
		var err error
		v.ForEach(func(k, val lua.LValue) {
			if err != nil {
				return
			}
			var gv Value
			if gv, err = toGo(L, val, depth+1, budget); err != nil {
				return
			}
			if i, ok := k.(lua.LNumber); ok && float64(i) == float64(int(i)) && int(i) >= 1 && int(i) <= n {
				// ForEach visits the array part in order first; a hole-free
				// sequence lands here index by index.
				if int(i) == len(t.Array)+1 {
					t.Array = append(t.Array, gv)
					return
				}
			}
			switch k.(type) {
			case lua.LString, lua.LNumber, lua.LBool:
				var gk Value
				gk, _ = toGo(L, k, depth+1, budget)
				t.Hash = append(t.Hash, Pair{Key: gk, Val: gv})
			default:
				err = fmt.Errorf("a table key of type %s cannot leave the VM", k.Type())
			}
		})
		return t, err
	case *lua.LUserData:
		if codec.IsNull(L, v) {
			return Null{}, nil
		}
	}
	return nil, fmt.Errorf("a %s cannot leave the VM", v.Type())
}

// ToLua builds v in L.
func ToLua(L *lua.LState, v Value) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case Null:
		return codec.Null(L)
	case *Table:
		t := L.CreateTable(len(v.Array), len(v.Hash))
		for _, e := range v.Array {
			t.Append(ToLua(L, e))
		}
		for _, p := range v.Hash {
			t.RawSet(ToLua(L, p.Key), ToLua(L, p.Val))
		}
		if v.IsArray {
			_ = codec.MarkArray(L, t) // a fresh table has no metatable to conflict with
		}
		return t
	}
	return lua.LNil
}
