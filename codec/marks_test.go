package codec

import (
	"errors"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestArrayMarkIsProtected checks that Lua code cannot read, replace or clear
// the array mark, and sees a stable name instead of the metatable.
func TestArrayMarkIsProtected(t *testing.T) {
	tests := []struct {
		name, code, wantErr string
	}{
		{"getmetatable names the mark", `assert(getmetatable(array({})) == "shield.array")`, ""},
		{"decoded arrays carry it", `assert(getmetatable(decoded) == "shield.array")`, ""},
		{"setmetatable is refused", `setmetatable(array({}), {})`, "cannot change a protected metatable"},
		{"clearing is refused", `setmetatable(decoded, nil)`, "cannot change a protected metatable"},
		{"marking twice is fine", `local a = array({}); assert(array(a) == a)`, ""},
		{"a table with a metatable is refused", `array(setmetatable({}, {}))`, ErrMetatable.Error()},
		{"null names itself", `assert(getmetatable(null) == "shield.null")`, ""},
		{"tostring(null)", `assert(tostring(null) == "null")`, ""},
		{"null is not nil", `assert(null ~= nil and type(null) == "userdata")`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L := newState(t)
			v, err := DecodeJSON(L, []byte(`[1]`))
			if err != nil {
				t.Fatal(err)
			}
			L.SetGlobal("decoded", v)
			err = L.DoString(tt.code)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("%s: %v", tt.code, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("%s: error %v, want %q", tt.code, err, tt.wantErr)
			}
			if !IsArray(L, v.(*lua.LTable)) {
				t.Error("decoded array lost its mark")
			}
		})
	}
}

func TestMarkArrayFromGo(t *testing.T) {
	L := newState(t)
	plain := L.NewTable()
	if IsArray(L, plain) {
		t.Fatal("a new table is marked")
	}
	if err := MarkArray(L, plain); err != nil || !IsArray(L, plain) {
		t.Fatalf("MarkArray: %v, marked %v", err, IsArray(L, plain))
	}
	zero := &lua.LTable{} // Metatable is a Go nil, not LNil
	if err := MarkArray(L, zero); err != nil || !IsArray(L, zero) {
		t.Fatalf("MarkArray(&LTable{}): %v", err)
	}
	owned := L.NewTable()
	owned.Metatable = L.NewTable()
	if err := MarkArray(L, owned); !errors.Is(err, ErrMetatable) {
		t.Fatalf("MarkArray on a table with a metatable: %v, want ErrMetatable", err)
	}
	// Another VM's mark is a foreign metatable here.
	L2 := newState(t)
	other := L2.NewTable()
	if err := MarkArray(L2, other); err != nil {
		t.Fatal(err)
	}
	if IsArray(L, other) {
		t.Error("another VM's mark counts here")
	}
}

// TestMarksSharedByCoroutines checks that a coroutine (a separate LState
// sharing the VM's globals) sees the same sentinels.
func TestMarksSharedByCoroutines(t *testing.T) {
	L := newState(t)
	co, cancel := L.NewThread()
	if cancel != nil {
		defer cancel()
	}
	if Null(co) != Null(L) {
		t.Error("a coroutine has its own null")
	}
	v, err := DecodeJSON(co, []byte(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	if !IsArray(L, v.(*lua.LTable)) {
		t.Error("an array decoded in a coroutine is not an array in its VM")
	}
	if !IsNull(L, Null(co)) || IsNull(L, lua.LNil) {
		t.Error("IsNull disagrees")
	}
}

func TestIntern(t *testing.T) {
	L := newState(t)
	st := stateOf(L)
	a := st.intern([]byte("player_id"))
	b := st.intern([]byte("player_id"))
	if a != b || len(st.keys) != 1 {
		t.Fatalf("intern: %q %q, %d keys", a, b, len(st.keys))
	}
	st.intern([]byte(strings.Repeat("k", maxInternedBytes+1)))
	if len(st.keys) != 1 {
		t.Error("a long key was interned")
	}
	for i := range maxInternedKeys + 10 {
		st.intern([]byte{byte(i), byte(i >> 8)})
	}
	if len(st.keys) != maxInternedKeys {
		t.Errorf("intern cache holds %d keys, cap %d", len(st.keys), maxInternedKeys)
	}
}
