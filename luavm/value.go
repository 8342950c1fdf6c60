package luavm

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
)

// Values cross from one VM to another (shield.call's and shield.send's
// arguments and results, reload state) as copies under the JSON <-> Lua
// mapping of SPEC §8, exactly as a request body does: the same in one
// process and across nodes. A function, userdata or coroutine among them
// is an error at the sender. A nil is the empty copy, so that a nil
// argument stays nil rather than becoming shield.null.

// EncodeValue copies v out of L: its compact JSON, or nil for nil.
func EncodeValue(L *lua.LState, v lua.LValue) ([]byte, error) {
	if v == lua.LNil {
		return nil, nil
	}
	return codec.AppendJSON(nil, L, v)
}

// DecodeValue builds a copy made by EncodeValue in L.
func DecodeValue(L *lua.LState, b []byte) (lua.LValue, error) {
	if len(b) == 0 {
		return lua.LNil, nil
	}
	return codec.DecodeJSON(L, b)
}
