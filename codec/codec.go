package codec

import (
	"bytes"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/internal/cowmap"
)

// Codec turns a route's body bytes into a Lua value and back. schema is the
// route's schema or message name (request_schema, else the route's name);
// codecs that need no schema, like json, ignore it.
//
// A Codec is shared by every VM, so it must be safe for concurrent use; any
// per-VM state it needs belongs in the LState it is handed.
type Codec interface {
	// Name is the value of a listener's `protocol.body` that selects the codec.
	Name() string
	// Decode turns body into a Lua value for a handler. Errors are
	// client_rpc.decode_failed (errors.As finds a *codes.Error). The result
	// never aliases body, which the caller may reuse.
	Decode(L *lua.LState, schema string, body []byte) (lua.LValue, error)
	// Encode turns a handler's result (or a push body) into a new slice,
	// which the caller owns: it is usually handed to another goroutine.
	Encode(L *lua.LState, schema string, v lua.LValue) ([]byte, error)
}

// JSONName is the name the json codec is registered under.
const JSONName = "json"

// registry maps a codec name to its Codec. Registration normally happens in
// init functions, but it may happen while configs compile, possibly from
// tests in parallel; a lookup takes no lock, since every request's body is
// decoded and its answer encoded through one, from every actor at once.
var registry cowmap.Map[string, Codec]

// Register makes c available to Lookup under c.Name(). As with grpc-go's
// encoding.RegisterCodec, a later registration under the same name replaces
// the earlier one. It panics on a nil codec or an empty name, which are
// programming errors found at init.
func Register(c Codec) {
	if c == nil {
		panic("codec: Register of a nil Codec")
	}
	name := c.Name()
	if name == "" {
		panic("codec: Register of a Codec with an empty name")
	}
	registry.Store(name, c)
}

// Lookup returns the codec registered under name, and whether there is one.
func Lookup(name string) (Codec, bool) { return registry.Load(name) }

func init() {
	Register(jsonCodec{})
}

// jsonCodec is the SPEC's default body codec; see the package comment for
// its mapping. It holds no state: the per-VM sentinels live in the LState.
type jsonCodec struct{}

var _ Codec = jsonCodec{}

// Name returns "json".
func (jsonCodec) Name() string { return JSONName }

// Decode decodes body with DecodeJSON; schema is unused.
func (jsonCodec) Decode(L *lua.LState, _ string, body []byte) (lua.LValue, error) {
	return DecodeJSON(L, body)
}

// Encode encodes v with AppendJSON into a new slice; schema is unused. It
// writes into the VM's scratch buffer and copies the result out, so a body
// costs one allocation of its exact size instead of a series of regrowths.
func (jsonCodec) Encode(L *lua.LState, _ string, v lua.LValue) ([]byte, error) {
	st := stateOf(L)
	out, err := AppendJSON(st.out[:0], L, v)
	if err != nil {
		return nil, err
	}
	body := bytes.Clone(out)
	if cap(out) <= maxKeptBytes {
		st.out = out[:0]
	}
	return body, nil
}
