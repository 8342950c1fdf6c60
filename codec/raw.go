package codec

import (
	"errors"

	lua "github.com/yuin/gopher-lua"
)

// RawName is the name the raw codec is registered under.
const RawName = "raw"

// ErrRawNotString is the raw codec's encode error for anything but a Lua
// string: raw bodies are opaque bytes, and guessing a text form for a table
// or a number would put bytes on the wire that no client asked for. The
// runtime reports it as client_rpc.handler_failed with a log line.
var ErrRawNotString = errors.New("raw body: a response or push body must be a string")

// rawCodec is `body: raw`: the handler gets the body as a Lua string and
// must answer with one. Lua strings hold any bytes, so decoding never fails.
type rawCodec struct{}

var _ Codec = rawCodec{}

func init() {
	Register(rawCodec{})
}

// Name returns "raw".
func (rawCodec) Name() string { return RawName }

// Decode returns body as a Lua string (a copy: the string never aliases
// body); schema is unused. An empty body is the empty string.
func (rawCodec) Decode(_ *lua.LState, _ string, body []byte) (lua.LValue, error) {
	return lua.LString(body), nil
}

// Encode returns the bytes of a Lua string; anything else, nil included, is
// an error wrapping ErrRawNotString that names the type it got. (A handler
// that returns nothing never reaches the codec: the runtime sends an empty
// body for it.)
func (rawCodec) Encode(_ *lua.LState, _ string, v lua.LValue) ([]byte, error) {
	s, ok := v.(lua.LString)
	if !ok {
		got := "nil"
		if v != nil {
			got = v.Type().String()
		}
		return nil, &typeError{err: ErrRawNotString, got: got}
	}
	return []byte(s), nil
}

// typeError is ErrRawNotString with the type found.
type typeError struct {
	err error
	got string
}

func (e *typeError) Error() string { return e.err.Error() + ", got " + e.got }
func (e *typeError) Unwrap() error { return e.err }
