package codec

import (
	"encoding/json"
	"testing"
)

// stdNumber is encoding/json's text for f.
func stdNumber(t testing.TB, f float64) string {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" means the input comes back unchanged
	}{
		{"empty array", `[]`, ``},
		{"empty object", `{}`, ``},
		{"array of null", `[null]`, ``},
		{"array of arrays", `[[],[[]],{}]`, ``},
		{"object with null", `{"a":null}`, ``},
		{"nested", `{"a":{"b":[1,{"c":[]}]}}`, ``},
		{"string keys that look like numbers", `{"1":"a","2":"b"}`, ``},
		{"big integer comes back as a string", `{"id":18446744073709551615}`, `{"id":"18446744073709551615"}`},
		{"2^53 stays a number", `9007199254740992`, ``},
		{"integral float loses its fraction", `3.0`, `3`},
		{"exponent form normalised", `[1E2,1e-7,2.50]`, `[100,1e-7,2.5]`},
		{"fraction", `0.1`, ``},
		{"negative zero", `-0`, `0`},
		{"unicode", `"é中😀\u00e9"`, `"é中😀é"`},
		{"escapes normalised", `"\/\u0041\u000a\u001F"`, `"/A\n\u001f"`},
		{"html", `"<>&"`, ``},
		{"keys sorted", `{"b":1,"a":{"d":2,"c":3}}`, `{"a":{"c":3,"d":2},"b":1}`},
		{"whitespace dropped", " [ 1 , { \"a\" : true } ] ", `[1,{"a":true}]`},
		{"repeated key", `{"a":1,"a":2}`, `{"a":2}`},
		{"move message", moveMessage, `{"facing":"north","flags":{"jump":false,"run":true},"legs":[{"x":1,"y":2},{"x":3,"y":4}],"player_id":"p-1042","room":"r-17","seq":18231,"x":1024.5,"y":-33.25,"z":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L := newState(t)
			v, err := DecodeJSON(L, []byte(tt.in))
			if err != nil {
				t.Fatalf("DecodeJSON(%q): %v", tt.in, err)
			}
			got, err := AppendJSON(nil, L, v)
			if err != nil {
				t.Fatalf("AppendJSON(%s): %v", show(L, v), err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if string(got) != want {
				t.Errorf("round trip of %s = %s, want %s", tt.in, got, want)
			}
		})
	}
}

// TestLuaEditsKeepArrays checks that a decoded array stays an array while
// Lua code edits it without touching its metatable.
func TestLuaEditsKeepArrays(t *testing.T) {
	L := newState(t)
	v, err := DecodeJSON(L, []byte(`{"items":[1,2,3],"none":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("msg", v)
	if err := L.DoString(`
		table.remove(msg.items, 1)
		table.remove(msg.items, 1)
		table.remove(msg.items, 1)
		msg.none[1] = "x"
		msg.none[1] = nil
		local copy = {}
		for i, x in ipairs(msg.items) do copy[i] = x end
		msg.copy = copy
	`); err != nil {
		t.Fatal(err)
	}
	got, err := AppendJSON(nil, L, v)
	if err != nil {
		t.Fatal(err)
	}
	// copy is an unmarked empty table: Lua made it, so it is an object.
	if want := `{"copy":{},"items":[],"none":[]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
