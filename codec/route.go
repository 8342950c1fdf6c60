package codec

import (
	"fmt"
	"unsafe"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// This file is the one owner of the body-codec policy: which codec a
// route's request is decoded with, which encodes its responses and pushes,
// and when its JSON Schema applies (SPEC §2 action and request_codec, §6,
// §8). Everything else (the runtime, the start-up checks, `gateway check`)
// asks here instead of deciding for itself.

// Request says how a route's request bodies reach its handler.
type Request uint8

const (
	// RequestNone: no VM decodes the route's requests (an s2c route, which
	// clients may not send, or action drop, which the gateway drops).
	RequestNone Request = iota
	// RequestRaw: the handler gets the raw bytes as a string
	// (action forward_raw, or a request_codec other than json).
	RequestRaw
	// RequestJSON: json with the fallback of SPEC §2 (a non-JSON body is a
	// string, an empty one nil), whatever the listener's codec
	// (request_codec: json).
	RequestJSON
	// RequestListener: the listener's body codec (request_codec empty).
	RequestListener
)

// RequestOf is how route r's requests are decoded.
func RequestOf(r *descriptor.Route) Request {
	switch {
	case !r.Direction.FromClient() || r.Action == config.Drop:
		return RequestNone
	case r.Action == config.ForwardRaw:
		return RequestRaw
	case r.RequestCodec == "":
		return RequestListener
	case r.RequestCodec == JSONName:
		return RequestJSON
	default:
		return RequestRaw
	}
}

// UsesListener reports whether some body of route r must pass through its
// listener's codec: a request decoded and its response encoded, or a push
// encoded. A forward_raw handler's string result skips the codec, so such
// a route is required to have what the codec needs (a protobuf message)
// only when it is also a push route; a forward_raw handler that returns a
// table on a listener whose codec cannot encode it fails then.
func UsesListener(r *descriptor.Route) bool {
	switch r.Action {
	case config.Drop:
		return false
	case config.ForwardRaw:
		return r.Direction.ToClient()
	}
	return true
}

// Validated reports whether a route's requests are JSON-decoded and so may
// be validated against a JSON Schema: its requests are decoded with json
// (RequestJSON, or RequestListener on a json listener, which the caller
// knows). forward_raw, drop and a request_codec other than json hand over
// (or drop) the raw bytes, and a schema does not apply to them.
func Validated(r *descriptor.Route) bool {
	switch RequestOf(r) {
	case RequestJSON, RequestListener:
		return true
	}
	return false
}

// DecodeObservable reports whether decoding a request on route r, from a
// session whose listener's codec key is key, can be seen by anything but
// the handler's req argument: a protobuf (or any non-json listener codec)
// decode can fail and answer decode_failed, and a JSON Schema can answer
// schema_violation. A json decode never fails (SPEC §2's string fallback)
// and a raw body is its bytes, so without a schema neither is observable:
// lazy_decode skips them for a handler that takes no req (luavm).
func DecodeObservable(r *descriptor.Route, key string, s *Schemas) bool {
	switch RequestOf(r) {
	case RequestNone, RequestRaw:
		return false
	case RequestListener:
		if key != "" && key != JSONName {
			return true
		}
	}
	return s.Has(r.ID)
}

// lookup returns the codec registered under key, or an error naming it.
func lookup(key string) (Codec, error) {
	if c, ok := Lookup(key); ok {
		return c, nil
	}
	return nil, fmt.Errorf("no body codec %q", key)
}

// DecodeRequest turns the body of a request on route r, from a session
// whose listener's codec key is key ("" is json), into the handler's request argument.
// unwrap applies SPEC §3's tolerance of a legacy wrapper inside a header
// envelope's json body. A route with a JSON Schema is validated whatever
// its body (SPEC §6): a body that is not JSON as the string it reaches Lua
// as, an empty body as null. Errors are *codes.Error values with code
// decode_failed or schema_violation.
//
// body must never be written once it is passed here: a raw request's
// string, and a non-JSON body's, share its memory instead of copying it
// (see luaString).
func DecodeRequest(L *lua.LState, r *descriptor.Route, key string, body []byte, unwrap bool, s *Schemas) (lua.LValue, error) {
	if key == "" {
		key = JSONName
	}
	how := RequestOf(r)
	if how == RequestListener && key != JSONName {
		c, err := lookup(key)
		if err != nil {
			return nil, codes.New(codes.DecodeFailed, "%v", err)
		}
		return c.Decode(L, SchemaName(r), body)
	}
	if how != RequestJSON && how != RequestListener {
		return luaString(body), nil
	}
	// json: try JSON, fall back to the bytes as a string (SPEC §2
	// request_codec), so a body that is not JSON never fails to decode.
	if len(body) == 0 {
		return lua.LNil, s.validateValue(r.ID, nil)
	}
	if unwrap {
		if inner, ok := UnwrapLegacy(body); ok {
			body = inner
		}
	}
	v, err := DecodeJSON(L, body)
	if err != nil {
		str := luaString(body)
		return str, s.validateValue(r.ID, string(str))
	}
	return v, s.Validate(r.ID, body)
}

// EncodeResponse encodes a handler's result v (not nil) as the response
// to a request on route r from a session whose listener's codec key is
// key: a forward_raw handler's string unchanged (SPEC §2), anything else
// with the listener's codec, under the route's message. An error wrapping
// ErrTooLarge means the encoding passed lua.max_string_bytes.
//
// A forward_raw string comes back sharing the string's memory (see
// luaString): the caller must never write to the bytes.
func EncodeResponse(L *lua.LState, r *descriptor.Route, key string, v lua.LValue) ([]byte, error) {
	if s, ok := v.(lua.LString); ok && r.Action == config.ForwardRaw {
		return unsafe.Slice(unsafe.StringData(string(s)), len(s)), nil
	}
	return encode(L, r, key, v)
}

// luaString is body as a Lua string that shares its memory: no copy.
//
// Why this is sound: a request's body is the frame's own memory, never
// written after it was decoded (envelope.Frame.Body, ingress.ClientIngress
// .Body), and a Lua string is never written at all. So a body that reaches
// a forward_raw handler and goes back unchanged is the same bytes from the
// read to the write, which would otherwise be copied twice and allocated
// twice per request (a fifth of the allocation of a forward_raw echo,
// BENCHMARKS.md). A string keeps the whole body alive, which is the
// body's own size.
func luaString(body []byte) lua.LString {
	if len(body) == 0 {
		return ""
	}
	return lua.LString(unsafe.String(unsafe.SliceData(body), len(body)))
}

// EncodePush encodes a push body v for route r for the sessions of
// listeners whose codec key is key, under the route's own message.
func EncodePush(L *lua.LState, r *descriptor.Route, key string, v lua.LValue) ([]byte, error) {
	return encode(L, r, key, v)
}

func encode(L *lua.LState, r *descriptor.Route, key string, v lua.LValue) ([]byte, error) {
	if key == "" {
		key = JSONName
	}
	c, err := lookup(key)
	if err != nil {
		return nil, err
	}
	return c.Encode(L, SchemaName(r), v)
}
