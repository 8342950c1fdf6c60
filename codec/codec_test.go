package codec

import (
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
)

func TestLookupJSON(t *testing.T) {
	c, ok := Lookup(JSONName)
	if !ok || c.Name() != JSONName {
		t.Fatalf("Lookup(%q) = %v, %v", JSONName, c, ok)
	}
	if c, ok := Lookup("protobuf"); ok || c != nil {
		t.Errorf("Lookup(unregistered) = %v, %v", c, ok)
	}
}

type fakeCodec struct{ name string }

func (f fakeCodec) Name() string { return f.name }
func (fakeCodec) Decode(*lua.LState, string, []byte) (lua.LValue, error) {
	return lua.LNil, nil
}
func (fakeCodec) Encode(*lua.LState, string, lua.LValue) ([]byte, error) { return nil, nil }

func TestRegister(t *testing.T) {
	Register(fakeCodec{"test-fake"})
	t.Cleanup(func() { registry.Delete("test-fake") })
	if c, ok := Lookup("test-fake"); !ok || c.Name() != "test-fake" {
		t.Fatalf("Lookup after Register = %v, %v", c, ok)
	}
	for name, c := range map[string]Codec{"nil": nil, "empty name": fakeCodec{""}} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			Register(c)
		})
	}
}

func TestJSONCodec(t *testing.T) {
	L := newState(t)
	c, _ := Lookup(JSONName)
	v, err := c.Decode(L, "ignored.schema", []byte(moveMessage))
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.Encode(L, "ignored.schema", v)
	if err != nil {
		t.Fatal(err)
	}
	// The body is the caller's: a second Encode must not overwrite it.
	first := string(body)
	if _, err := c.Encode(L, "", eval(t, L, `{"something else entirely"}`)); err != nil {
		t.Fatal(err)
	}
	if string(body) != first {
		t.Errorf("Encode result changed after a later Encode: %s", body)
	}

	_, err = c.Decode(L, "", []byte(`{"x":`))
	if code, ok := codes.CodeOf(err); !ok || code != codes.DecodeFailed {
		t.Errorf("Decode error code = %q, %v", code, ok)
	}
	if b, err := c.Encode(L, "", eval(t, L, `{f=print}`)); err == nil || b != nil {
		t.Errorf("Encode of a function = %q, %v", b, err)
	}
}
