package codec

import (
	"errors"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

func TestRawRegistered(t *testing.T) {
	c, ok := Lookup(RawName)
	if !ok || c.Name() != RawName {
		t.Fatalf("raw codec not registered: %v %v", c, ok)
	}
}

// TestRawRoundTrip: any bytes, the empty body and invalid UTF-8 included,
// reach Lua as a string and go back unchanged.
func TestRawRoundTrip(t *testing.T) {
	c, _ := Lookup(RawName)
	L := newState(t)
	for _, body := range []string{"", "hello", "\x00\xff\xfe", `{"x":1}`, strings.Repeat("ab", 5000)} {
		in := []byte(body)
		v, err := c.Decode(L, "ignored", in)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := v.(lua.LString)
		if !ok || string(s) != body {
			t.Fatalf("decoded %#v", v)
		}
		out, err := c.Encode(L, "", v)
		if err != nil || string(out) != body {
			t.Fatalf("encoded %q, %v", out, err)
		}
	}
}

// TestRawDecodeCopies: the string does not alias the body, which the
// caller reuses.
func TestRawDecodeCopies(t *testing.T) {
	c, _ := Lookup(RawName)
	L := newState(t)
	body := []byte("abc")
	v, _ := c.Decode(L, "", body)
	body[0] = 'X'
	if v.String() != "abc" {
		t.Fatalf("decoded string changed with the body: %q", v.String())
	}
}

// TestRawEncodeNeedsString: anything but a string is an error naming what
// it got, which the runtime turns into client_rpc.handler_failed.
func TestRawEncodeNeedsString(t *testing.T) {
	c, _ := Lookup(RawName)
	L := newState(t)
	for _, tc := range []struct {
		v    lua.LValue
		want string
	}{
		{L.NewTable(), "got table"},
		{lua.LNumber(1), "got number"},
		{lua.LTrue, "got boolean"},
		{lua.LNil, "got nil"},
		{nil, "got nil"},
		{Null(L), "got userdata"},
	} {
		b, err := c.Encode(L, "", tc.v)
		if !errors.Is(err, ErrRawNotString) || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%v: %q, %v; want %q", tc.v, b, err, tc.want)
		}
	}
}

// FuzzRawDecode: every body decodes, to exactly its bytes, and encodes
// back unchanged; the string never aliases the body.
func FuzzRawDecode(f *testing.F) {
	for _, s := range []string{"", "x", "\xff\x00", moveMessage} {
		f.Add([]byte(s))
	}
	c, _ := Lookup(RawName)
	f.Fuzz(func(t *testing.T, data []byte) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		want := string(data)
		v, err := c.Decode(L, "", data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range data {
			data[i] ^= 0xff
		}
		if s, ok := v.(lua.LString); !ok || string(s) != want {
			t.Fatalf("decoded %#v, want %q", v, want)
		}
		out, err := c.Encode(L, "", v)
		if err != nil || string(out) != want {
			t.Fatalf("encoded %q, %v", out, err)
		}
	})
}
