package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shieldrpc/shield/codes"
)

// fuzzMessages are the messages every fuzzed body is decoded as: the one
// with a field of each kind, the benchmark's move, and proto2's required
// field.
var fuzzMessages = []string{msgEverything, msgMove, msgLegacy}

// FuzzProtobufDecode feeds untrusted bodies to the protobuf codec. It
// checks that decoding never panics; that a failure is
// client_rpc.decode_failed naming the message; and that a success encodes
// back to bytes that hold the same message as the body (less its unknown
// fields, which are dropped) and that encode the same way once decoded.
func FuzzProtobufDecode(f *testing.F) {
	p := loadTestProtobuf(f)
	for _, seed := range []struct{ msg, js string }{
		{msgMove, `{"player_id":"p-1042","seq":"18231","x":1024.5,"y":-33.25,"facing":"north","legs":[{"x":1,"y":2},{"x":3,"y":4}],"flags":{"run":true,"jump":false},"room":"r-17"}`},
		{msgEverything, `{"i64":"-9223372036854775808","u64":"18446744073709551615","facings":["west",2],"slots":{"1":"a"},"scores":{"18446744073709551615":"-1"}}`},
		{msgEverything, `{"at":"2024-01-02T03:04:05Z","took":"-1.5s","extra":{"a":[1,null,{"b":true}]},"any_value":null,"list":[],"boxed":"1","packed":{"@type":"type.googleapis.com/shield.codectest.Vec","x":1}}`},
		{msgEverything, `{"inner":{"children":[{"children":[{"name":"deep"}]}]},"target":{"x":1},"maybe":0,"dbl":"NaN","flt":"-Infinity","blob":"/wA="}`},
		{msgLegacy, `{"id":1,"name":"n"}`},
	} {
		f.Add(wire(f, p, seed.msg, seed.js))
	}
	for _, b := range []string{"", "\xff", "\x0a\x01\xff", "\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", "\xa2\x06\x00"} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		for _, msg := range fuzzMessages {
			checkProtobufDecode(t, L, p, msg, data)
		}
	})
}

func checkProtobufDecode(t *testing.T, L *lua.LState, p *Protobuf, msg string, data []byte) {
	t.Helper()
	v, err := p.Decode(L, msg, data)
	if err != nil {
		var ce *codes.Error
		if !errors.As(err, &ce) || ce.Code != codes.DecodeFailed || !strings.HasPrefix(ce.Message, "protobuf "+msg+": ") {
			t.Fatalf("%s: error %v is not a decode_failed naming the message", msg, err)
		}
		return
	}
	b, err := p.Encode(L, msg, v)
	if err != nil {
		t.Fatalf("%s: decoded %s does not encode: %v", msg, show(L, v), err)
	}
	mt, _ := p.messageType(msg)
	orig, back := mt.New().Interface(), mt.New().Interface()
	uo := proto.UnmarshalOptions{DiscardUnknown: true, Resolver: p.resolver}
	if err := uo.Unmarshal(data, orig); err != nil {
		t.Fatalf("%s: the codec accepted what proto rejects: %v", msg, err)
	}
	if err := uo.Unmarshal(b, back); err != nil {
		t.Fatalf("%s: re-encoded bytes do not decode: %v", msg, err)
	}
	// A google.protobuf.Value goes through SPEC's JSON rules like any JSON
	// body: a number above 2^53 reaches Lua as a string and stays one, and
	// a NullValue other than 0 is null. A float's -0 reaches Lua as 0 (SPEC: Lua authors do not
	// meet -0), so a proto3 field holding -0 comes back unset. The rest must
	// survive exactly.
	normalize(orig.ProtoReflect())
	normalize(back.ProtoReflect())
	if !proto.Equal(orig, back) {
		t.Fatalf("%s: round trip changed the message:\n in  %v\n out %v", msg, orig, back)
	}
	// One round reaches a fixed point: the bytes a decoded value encodes
	// to decode to a value that encodes to them again.
	v2, err := p.Decode(L, msg, b)
	if err != nil {
		t.Fatalf("%s: re-encoded bytes fail: %v", msg, err)
	}
	b2, err := p.Encode(L, msg, v2)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("%s: no fixed point: %s -> %x, then %s -> %x (%v)", msg, show(L, v), b, show(L, v2), b2, err)
	}
}

// normalize clears, through every nested message, the fields whose JSON
// values SPEC's rules change: the JSON-valued well-known types, and
// floats holding -0 without explicit presence.
func normalize(r protoreflect.Message) {
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() != nil && isJSONValued(fd.Message().FullName()):
			r.Clear(fd)
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				normalize(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				normalize(mv.Message())
				return true
			})
		case fd.IsMap() || fd.IsList():
		case fd.Message() != nil:
			normalize(v.Message())
		case (fd.Kind() == protoreflect.FloatKind || fd.Kind() == protoreflect.DoubleKind) && !fd.HasPresence() && v.Float() == 0:
			r.Clear(fd)
		}
		return true
	})
}

func isJSONValued(name protoreflect.FullName) bool {
	return name == "google.protobuf.Struct" || name == "google.protobuf.Value" || name == "google.protobuf.ListValue"
}
