package codec

import (
	"errors"

	lua "github.com/yuin/gopher-lua"
)

// registryKey is the LState registry slot holding the VM's codec state. The
// registry is shared by a VM's coroutines (they share one lua.Global) and is
// out of reach of Lua code, which has no debug library, so the sentinels
// cannot be swapped from a script.
const registryKey = "shield.codec"

// Values that getmetatable returns for the two sentinels. The marker
// metatables carry them in __metatable, which makes setmetatable refuse to
// replace or clear the mark and hides the metatable itself from Lua.
const (
	arrayMetaName = "shield.array"
	nullMetaName  = "shield.null"
)

// Scratch buffers grown past these sizes by one large body are dropped after
// use, so a single big message does not pin memory in a VM forever.
const (
	maxKeptMembers = 4096
	maxKeptBytes   = 64 << 10
)

// Keys interned per VM: game messages reuse a small vocabulary of object
// keys, so decoding them without allocating pays off; the caps bound what a
// client sending random keys can make a VM hold.
const (
	maxInternedKeys  = 1024
	maxInternedBytes = 64
)

// ErrMetatable is returned by MarkArray for a table that already has a
// metatable other than the array mark: replacing it would silently break
// whatever the table's owner built on it.
var ErrMetatable = errors.New("codec: table already has a metatable, cannot mark it as an array")

// member is one object entry, or one array element with an empty key,
// waiting in a scratch stack until its container's size is known.
type member struct {
	key   string     // encode: an object entry's key
	boxed lua.LValue // decode: an object entry's key, boxed; nil for an array element
	val   lua.LValue
}

// vmState is everything the codec keeps per VM. Only the goroutine running
// the VM touches it, and encoding or decoding never runs Lua code, so one
// set of scratch buffers cannot be in use twice at once.
// Tabler is implemented by the Value of a userdata that stands for a table
// of plain fields, such as luavm's read-only ClientContext: every encoder
// here, and with it the JSON mapping between VMs, writes such a userdata as
// the table Table builds, as if the script held that table.
type Tabler interface {
	Table(L *lua.LState) *lua.LTable
}

type vmState struct {
	null      *lua.LUserData // shield.null
	arrayMeta *lua.LTable    // metatable marking a table as a JSON array

	members   []member              // decode: pending elements; encode: object entries
	buf       []byte                // decode: unescaped string bytes
	out       []byte                // jsonCodec.Encode: output before it is copied out
	ancestors []*lua.LTable         // encode: tables being written, to find cycles
	keys      map[string]lua.LValue // decode: interned object keys, boxed
	maxOut    int                   // encode: the longest output; 0 means DefaultMaxEncodeBytes
}

// stateOf returns L's codec state, creating it on first use.
func stateOf(L *lua.LState) *vmState {
	reg := L.G.Registry
	if ud, ok := reg.RawGetString(registryKey).(*lua.LUserData); ok {
		if st, ok := ud.Value.(*vmState); ok {
			return st
		}
	}
	st := newVMState(L)
	ud := L.NewUserData()
	ud.Value = st
	reg.RawSetString(registryKey, ud)
	return st
}

func newVMState(L *lua.LState) *vmState {
	arrayMeta := L.CreateTable(0, 1)
	arrayMeta.RawSetString("__metatable", lua.LString(arrayMetaName))

	nullMeta := L.CreateTable(0, 2)
	nullMeta.RawSetString("__metatable", lua.LString(nullMetaName))
	// tostring(shield.null) reads "null" in logs instead of an address.
	nullMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("null"))
		return 1
	}))
	null := L.NewUserData()
	null.Metatable = nullMeta

	return &vmState{
		null:      null,
		arrayMeta: arrayMeta,
		keys:      make(map[string]lua.LValue),
	}
}

// Null returns L's shield.null: the userdata that JSON null decodes to and
// that encodes as null. Each VM has its own; a null from another VM is just
// userdata to this one.
func Null(L *lua.LState) lua.LValue {
	return stateOf(L).null
}

// IsNull reports whether v is L's shield.null.
func IsNull(L *lua.LState, v lua.LValue) bool {
	ud, ok := v.(*lua.LUserData)
	return ok && ud == stateOf(L).null
}

// MarkArray marks t as a JSON array, so it encodes as one even when empty;
// shield.array(t) calls it. Marking a marked table again is a no-op. The
// mark is a protected metatable, so Lua code can neither remove nor replace
// it, and getmetatable(t) returns the string "shield.array". A table that
// already has another metatable is left alone and ErrMetatable returned.
func MarkArray(L *lua.LState, t *lua.LTable) error {
	st := stateOf(L)
	switch t.Metatable {
	case st.arrayMeta:
		return nil
	case lua.LNil, nil: // nil: a Go-built &lua.LTable{} has no LNil in it yet
		t.Metatable = st.arrayMeta
		return nil
	default:
		return ErrMetatable
	}
}

// IsArray reports whether t carries L's array mark.
func IsArray(L *lua.LState, t *lua.LTable) bool {
	return t.Metatable == stateOf(L).arrayMeta
}

// intern returns b as a boxed Lua string, reusing an earlier one for short
// keys: the table keeps the box (gopher-lua patch 4), so a decoded object
// costs no allocation for an interned key, to set or to walk. Looking a map
// up by string(b) does not allocate.
func (st *vmState) intern(b []byte) lua.LValue {
	if s, ok := st.keys[string(b)]; ok {
		return s
	}
	s := string(b)
	boxed := lua.LValue(lua.LString(s))
	if len(b) <= maxInternedBytes && len(st.keys) < maxInternedKeys {
		st.keys[s] = boxed
	}
	return boxed
}

// release drops the scratch stack's references, so decoded or encoded values
// do not stay reachable from the VM's state, and drops oversized buffers.
// Each container clears its own entries as it finishes, so only an error
// leaves anything below len to clear; nothing past len is ever set.
func (st *vmState) release() {
	clear(st.members)
	st.members = st.members[:0]
	if cap(st.members) > maxKeptMembers {
		st.members = nil
	}
	clear(st.ancestors)
	st.ancestors = st.ancestors[:0]
	if cap(st.buf) > maxKeptBytes {
		st.buf = nil
	}
}
