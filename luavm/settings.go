package luavm

import (
	"sort"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/config"
)

// shield.settings() returns a new copy of the actor's settings mapping
// each call (SPEC §8, §11): YAML mappings as tables, sequences as arrays
// (marked, as decoded JSON arrays are), null as shield.null. A script
// that writes into its copy changes nothing anyone else sees.
func (vm *VM) luaSettings(L *lua.LState) int {
	t := L.CreateTable(0, len(vm.spec.Settings))
	fillTable(L, t, vm.spec.Settings)
	L.Push(t)
	return 1
}

// fillTable sets m's keys in t, in sorted order so that building is
// deterministic.
func fillTable(L *lua.LState, t *lua.LTable, m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.RawSetString(k, settingValue(L, m[k]))
	}
}

// settingValue builds one setting in L.
func settingValue(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.CreateTable(0, len(v))
		fillTable(L, t, v)
		return t
	case []any:
		t := L.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(settingValue(L, e))
		}
		_ = codec.MarkArray(L, t) // a fresh table has no metatable to conflict with
		return t
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	case config.Null:
		return codec.Null(L)
	}
	return lua.LNil
}
