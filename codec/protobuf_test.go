package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/shieldrpc/shield/codes"
)

// testSet is the descriptor set built from testdata/proto (see the command
// in codectest.proto).
const testSet = "testdata/proto/codectest.pb"

var (
	testPBOnce sync.Once
	testPB     *Protobuf
	testPBErr  error
)

// loadTestProtobuf returns the codec of testSet, loaded once.
func loadTestProtobuf(t testing.TB) *Protobuf {
	t.Helper()
	testPBOnce.Do(func() { testPB, testPBErr = NewProtobuf(testSet) })
	if testPBErr != nil {
		t.Fatal(testPBErr)
	}
	return testPB
}

// wire encodes a message given in protobuf's own JSON form, independently
// of the codec's Lua path, as a client would.
func wire(t testing.TB, p *Protobuf, msg, js string) []byte {
	t.Helper()
	mt, err := p.messageType(msg)
	if err != nil {
		t.Fatal(err)
	}
	m := mt.New().Interface()
	if err := (protojson.UnmarshalOptions{Resolver: p.resolver}).Unmarshal([]byte(js), m); err != nil {
		t.Fatalf("%s %s: %v", msg, js, err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unwire decodes wire bytes to protobuf's canonical JSON (proto names),
// independently of the codec, for comparing what a client would read.
func unwire(t testing.TB, p *Protobuf, msg string, b []byte) string {
	t.Helper()
	mt, err := p.messageType(msg)
	if err != nil {
		t.Fatal(err)
	}
	m := mt.New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: p.resolver}).Unmarshal(b, m); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	js, err := protojson.MarshalOptions{UseProtoNames: true, Resolver: p.resolver}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	// protojson varies its whitespace at random; compact it.
	var out bytes.Buffer
	if err := json.Compact(&out, js); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

const (
	msgEverything = "shield.codectest.Everything"
	msgMove       = "shield.codectest.Move"
	msgOlder      = "shield.codectest.Older"
	msgLegacy     = "shield.codectest.legacy.Legacy"
)

// TestProtobufRoundTrip encodes a Lua value, checks the wire bytes as a
// client would read them, and decodes them back into Lua.
func TestProtobufRoundTrip(t *testing.T) {
	p := loadTestProtobuf(t)
	for _, tc := range []struct {
		name, msg, lua string
		wire           string // the wire bytes in protobuf's JSON form, proto names
		back           string // show() of the decoded value
	}{
		{
			name: "scalars",
			msg:  msgEverything,
			lua:  `{i32 = -5, u32 = 7, flt = 0.5, dbl = 1024.25, flag = true, text = "héllo", blob = "AQID"}`,
			wire: `{"i32":-5,"u32":7,"flt":0.5,"dbl":1024.25,"flag":true,"text":"héllo","blob":"AQID"}`,
			back: `{"blob"="AQID","dbl"=1024.25,"flag"=true,"flt"=0.5,"i32"=-5,"text"="héllo","u32"=7}`,
		},
		{
			name: "int64 edges as strings",
			msg:  msgEverything,
			lua:  `{i64 = "-9223372036854775808", u64 = "18446744073709551615", s64 = "9223372036854775807", f64 = "18446744073709551615", sf64 = "-9223372036854775808"}`,
			wire: `{"i64":"-9223372036854775808","u64":"18446744073709551615","s64":"9223372036854775807","f64":"18446744073709551615","sf64":"-9223372036854775808"}`,
			back: `{"f64"="18446744073709551615","i64"="-9223372036854775808","s64"="9223372036854775807","sf64"="-9223372036854775808","u64"="18446744073709551615"}`,
		},
		{
			// Lua numbers are accepted for 64-bit fields; they come back as
			// strings, SPEC's form for every 64-bit integer.
			name: "int64 from numbers",
			msg:  msgEverything,
			lua:  `{i64 = -1, u64 = 9007199254740992, ids = {1, "2", -3}}`,
			wire: `{"i64":"-1","u64":"9007199254740992","ids":["1","2","-3"]}`,
			back: `{"i64"="-1","ids"=["1","2","-3"],"u64"="9007199254740992"}`,
		},
		{
			name: "enums by name and by number",
			msg:  msgEverything,
			lua:  `{facing = "north", facings = {"west", 2, 0}}`,
			wire: `{"facing":"north","facings":["west","east","none"]}`,
			back: `{"facing"="north","facings"=["west","east","none"]}`,
		},
		{
			name: "nested messages",
			msg:  msgEverything,
			lua:  `{pos = {x = 1, y = -2.5}, inner = {name = "root", children = {{name = "a", children = {{name = "a1"}}}, {name = "b"}}}}`,
			wire: `{"pos":{"x":1,"y":-2.5},"inner":{"children":[{"children":[{"name":"a1"}],"name":"a"},{"name":"b"}],"name":"root"}}`,
			back: `{"inner"={"children"=[{"children"=[{"name"="a1"}],"name"="a"},{"name"="b"}],"name"="root"},"pos"={"x"=1,"y"=-2.5}}`,
		},
		{
			name: "repeated messages",
			msg:  msgMove,
			lua:  `{player_id = "p-1", legs = {{x = 1, y = 2}, {x = 3}, {}}}`,
			wire: `{"player_id":"p-1","legs":[{"x":1,"y":2},{"x":3},{}]}`,
			back: `{"legs"=[{"x"=1,"y"=2},{"x"=3},{}],"player_id"="p-1"}`,
		},
		{
			// An empty table in a repeated field is an empty list, which
			// proto3 does not populate: it is absent when decoded.
			name: "empty repeated",
			msg:  msgEverything,
			lua:  `{path = {}, ids = array({}), facings = {}, inner = {children = {}}}`,
			wire: `{"inner":{}}`,
			back: `{"inner"={}}`,
		},
		{
			name: "maps",
			msg:  msgEverything,
			lua:  `{named = {a = {x = 1}, b = {}}, slots = {[3] = "c", [-1] = "m"}, scores = {["18446744073709551615"] = "-9223372036854775808", ["0"] = 1}}`,
			wire: `{"named":{"a":{"x":1},"b":{}},"slots":{"-1":"m","3":"c"},"scores":{"0":"1","18446744073709551615":"-9223372036854775808"}}`,
			back: `{"named"={"a"={"x"=1},"b"={}},"scores"={"0"="1","18446744073709551615"="-9223372036854775808"},"slots"={"-1"="m","3"="c"}}`,
		},
		{
			// Keys 1..n would make AppendJSON write an array; the map field
			// says it is a map.
			name: "map keyed 1..n",
			msg:  msgEverything,
			lua:  `{slots = {"a", "b"}, named = {{x = 1}}}`,
			wire: `{"named":{"1":{"x":1}},"slots":{"1":"a","2":"b"}}`,
			back: `{"named"={"1"={"x"=1}},"slots"={"1"="a","2"="b"}}`,
		},
		{
			name: "lowerCamelCase names accepted",
			msg:  msgEverything,
			lua:  `{camelCaseName = "c", anyValue = 5}`,
			wire: `{"any_value":5,"camel_case_name":"c"}`,
			back: `{"any_value"=5,"camel_case_name"="c"}`,
		},
		{
			name: "oneof and explicit presence",
			msg:  msgEverything,
			lua:  `{target = {x = 0}, maybe = 0, i32 = 0}`,
			wire: `{"target":{},"maybe":0}`,
			back: `{"maybe"=0,"target"={}}`,
		},
		{
			name: "well-known types",
			msg:  msgEverything,
			lua: `{at = "2024-01-02T03:04:05.5Z", took = "1.5s", boxed = "7",
				extra = {a = 1, b = {"x", true, null}, c = {}, d = {"p", "q"}},
				list = {}, any_value = {k = array({})},
				packed = {["@type"] = "type.googleapis.com/shield.codectest.Vec", x = 1}}`,
			wire: `{"at":"2024-01-02T03:04:05.500Z","took":"1.500s","extra":{"a":1,"b":["x",true,null],"c":{},"d":["p","q"]},"any_value":{"k":[]},"list":[],"boxed":"7","packed":{"@type":"type.googleapis.com/shield.codectest.Vec","x":1}}`,
			back: `{"any_value"={"k"=[]},"at"="2024-01-02T03:04:05.500Z","boxed"="7","extra"={"a"=1,"b"=["x",true,null],"c"={},"d"=["p","q"]},"list"=[],"packed"={"@type"="type.googleapis.com/shield.codectest.Vec","x"=1},"took"="1.500s"}`,
		},
		{
			name: "proto2 defaults stay absent",
			msg:  msgLegacy,
			lua:  `{id = 1, name = ""}`,
			wire: `{"id":1,"name":""}`,
			back: `{"id"=1,"name"=""}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := newState(t)
			b, err := p.Encode(L, tc.msg, eval(t, L, tc.lua))
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if got := unwire(t, p, tc.msg, b); got != tc.wire {
				t.Errorf("wire\n got %s\nwant %s", got, tc.wire)
			}
			v, err := p.Decode(L, tc.msg, b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := show(L, v); got != tc.back {
				t.Errorf("decoded\n got %s\nwant %s", got, tc.back)
			}
			// What decodes re-encodes to the same bytes.
			again, err := p.Encode(L, tc.msg, v)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			if !bytes.Equal(again, b) {
				t.Errorf("re-encoded %x, first %x", again, b)
			}
		})
	}
}

// TestProtobufDecode decodes what a client wrote, with SPEC §8's mapping.
func TestProtobufDecode(t *testing.T) {
	p := loadTestProtobuf(t)
	for _, tc := range []struct {
		name, msg, client, want string
	}{
		{"int64 min and max", msgEverything,
			`{"i64":"-9223372036854775808","s64":"9223372036854775807","u64":"18446744073709551615"}`,
			`{"i64"="-9223372036854775808","s64"="9223372036854775807","u64"="18446744073709551615"}`},
		{"small int64 is still a string", msgMove, `{"seq":18231}`, `{"seq"="18231"}`},
		{"zero values are unpopulated", msgEverything, `{"i32":0,"text":"","flag":false,"facing":"none","pos":{}}`, `{"pos"={}}`},
		{"an enum number the set does not name stays a number", msgEverything, `{"facing":99}`, `{"facing"=99}`},
		{"floats beyond JSON numbers are strings", msgEverything, `{"dbl":"NaN","flt":"-Infinity"}`, `{"dbl"="NaN","flt"="-Infinity"}`},
		{"bytes are base64", msgEverything, `{"blob":"/wA="}`, `{"blob"="/wA="}`},
		{"the typical move", msgMove,
			`{"player_id":"p-1042","seq":"18231","x":1024.5,"y":-33.25,"facing":"north","legs":[{"x":1,"y":2},{"x":3,"y":4}],"flags":{"run":true,"jump":false},"room":"r-17"}`,
			`{"facing"="north","flags"={"jump"=false,"run"=true},"legs"=[{"x"=1,"y"=2},{"x"=3,"y"=4}],"player_id"="p-1042","room"="r-17","seq"="18231","x"=1024.5,"y"=-33.25}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := newState(t)
			v, err := p.Decode(L, tc.msg, wire(t, p, tc.msg, tc.client))
			if err != nil {
				t.Fatal(err)
			}
			if got := show(L, v); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestProtobufDeepStruct: a Struct takes three message levels per JSON
// level, and still decodes as deep as a JSON body may nest.
func TestProtobufDeepStruct(t *testing.T) {
	p := loadTestProtobuf(t)
	L := newState(t)
	const depth = MaxDepth - 2 // the message and extra's own object
	js := `{"extra":` + strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth) + `}`
	v, err := p.Decode(L, msgEverything, wire(t, p, msgEverything, js))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(L, v), `{"extra"=`+strings.Repeat(`{"a"=`, depth)+`1`+strings.Repeat(`}`, depth+1); got != want {
		t.Fatalf("decoded %s", got)
	}
}

// TestProtobufEmpty: an empty body is the message with nothing set, an
// empty (object) table; nil encodes as the empty message.
func TestProtobufEmpty(t *testing.T) {
	p := loadTestProtobuf(t)
	L := newState(t)
	for _, msg := range []string{msgEverything, "shield.codectest.Empty"} {
		v, err := p.Decode(L, msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(L, v); got != "{}" {
			t.Errorf("%s: decoded %s", msg, got)
		}
		b, err := p.Encode(L, msg, lua.LNil)
		if err != nil || b == nil || len(b) != 0 {
			t.Errorf("%s: nil encodes as %x, %v", msg, b, err)
		}
		if b, err := p.Encode(L, msg, L.NewTable()); err != nil || len(b) != 0 {
			t.Errorf("%s: {} encodes as %x, %v", msg, b, err)
		}
	}
}

// TestProtobufUnknownFieldsDropped: fields a newer peer added are dropped
// on decode, so they never reach Lua nor a response built from it.
func TestProtobufUnknownFieldsDropped(t *testing.T) {
	p := loadTestProtobuf(t)
	L := newState(t)
	newer := wire(t, p, msgEverything, `{"i32":7,"i64":"9","text":"new","pos":{"x":1},"named":{"a":{}}}`)
	v, err := p.Decode(L, msgOlder, newer)
	if err != nil {
		t.Fatal(err)
	}
	if got := show(L, v); got != `{"i32"=7}` {
		t.Errorf("decoded %s", got)
	}
	b, err := p.Encode(L, msgOlder, v)
	if err != nil {
		t.Fatal(err)
	}
	if got := unwire(t, p, msgEverything, b); got != `{"i32":7}` {
		t.Errorf("re-encoded %s", got)
	}
}

// TestProtobufEncodeErrors: values the message cannot hold fail the encode
// (the handler fails) with a message naming the message and the problem.
func TestProtobufEncodeErrors(t *testing.T) {
	p := loadTestProtobuf(t)
	for _, tc := range []struct {
		name, msg, lua, want string
	}{
		{"unknown key", msgMove, `{x = 1, speed = 3}`, `unknown field "speed"`},
		{"unknown nested key", msgMove, `{legs = {{x = 1, z = 2}}}`, `unknown field "z"`},
		{"both name forms", msgEverything, `{camel_case_name = "a", camelCaseName = "b"}`, `duplicate field`},
		{"wrong type", msgMove, `{x = "far"}`, `invalid value for double field x`},
		{"fraction in an integer", msgEverything, `{i32 = 1.5}`, `invalid value for int32 field i32`},
		{"int64 overflow", msgEverything, `{i64 = "9223372036854775808"}`, `invalid value for int64 field i64`},
		{"uint64 negative", msgEverything, `{u64 = "-1"}`, `invalid value for uint64 field u64`},
		{"unknown enum name", msgEverything, `{facing = "up"}`, `invalid value for enum field facing`},
		{"table for a string", msgEverything, `{text = {}}`, `invalid value for string field text`},
		{"list of non-messages", msgMove, `{legs = {1}}`, `unexpected token 1`},
		{"not a table", msgMove, `"x"`, `unexpected token "x"`},
		{"required field missing", msgLegacy, `{name = "n"}`, `required field shield.codectest.legacy.Legacy.id not set`},
		{"no such message", "shield.codectest.Nope", `{}`, `no such message in the descriptor set: "shield.codectest.Nope"`},
		{"a function", msgMove, `{room = print}`, `json encode: /room: a function cannot be encoded`},
		{"bad timestamp", msgEverything, `{at = "yesterday"}`, `invalid google.protobuf.Timestamp value`},
		{"an Any of an unknown type", msgEverything, `{packed = {["@type"] = "x/no.Such"}}`, `unable to resolve`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := newState(t)
			b, err := p.Encode(L, tc.msg, eval(t, L, tc.lua))
			if err == nil {
				t.Fatalf("encoded %x", b)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "protobuf encode") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if _, ok := codes.CodeOf(err); ok {
				t.Errorf("an encode error carries a client code: %v", err)
			}
		})
	}
}

// TestProtobufDecodeFailed: a body that is not the route's message is
// client_rpc.decode_failed, with "protobuf <message>: " before the reason.
func TestProtobufDecodeFailed(t *testing.T) {
	p := loadTestProtobuf(t)
	nest := func(n int) []byte {
		return wire(t, p, msgEverything, `{"inner":`+strings.Repeat(`{"children":[`, n)+strings.Repeat(`]}`, n)+`}`)
	}
	for _, tc := range []struct {
		name, msg string
		body      []byte
		want      string
	}{
		{"garbage", msgMove, []byte("\xff\xff\xff"), "cannot parse invalid wire-format data"},
		{"truncated", msgMove, wire(t, p, msgMove, `{"player_id":"p-1042"}`)[:4], "cannot parse invalid wire-format data"},
		{"JSON instead of protobuf", msgMove, []byte(`{"x":1}`), "cannot parse invalid wire-format data"},
		{"wrong wire type", msgMove, []byte{0x0a, 0x01, 0x41, 0x10}, "cannot parse invalid wire-format data"},
		{"invalid UTF-8 in a proto3 string", msgMove, []byte{0x0a, 0x01, 0xff}, "invalid UTF-8"},
		{"invalid UTF-8 in a proto2 string", msgLegacy, []byte{0x08, 0x01, 0x12, 0x01, 0xff}, "invalid UTF-8"},
		{"required field missing", msgLegacy, []byte{0x12, 0x01, 'n'}, "required field shield.codectest.legacy.Legacy.id not set"},
		{"nested too deep for Lua", msgEverything, nest(MaxDepth/2 + 2), "nesting deeper than 128"},
		{"nested too deep for the wire decoder", msgEverything, nest(3 * MaxDepth), "exceeded maximum recursion depth"},
		{"no such message", "shield.codectest.Nope", nil, `no such message in the descriptor set: "shield.codectest.Nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := newState(t)
			v, err := p.Decode(L, tc.msg, tc.body)
			if err == nil {
				t.Fatalf("decoded %s", show(L, v))
			}
			if v != lua.LNil {
				t.Errorf("value %v alongside the error", v)
			}
			var ce *codes.Error
			if !errors.As(err, &ce) || ce.Code != codes.DecodeFailed {
				t.Fatalf("error %v is not %s", err, codes.DecodeFailed)
			}
			if !strings.HasPrefix(ce.Message, "protobuf "+tc.msg+": ") || !strings.Contains(ce.Message, tc.want) {
				t.Errorf("message %q, want %q", ce.Message, tc.want)
			}
		})
	}
}

// TestProtobufDeterministic: a map's entries are written sorted, so one
// value always gives the same bytes.
func TestProtobufDeterministic(t *testing.T) {
	p := loadTestProtobuf(t)
	L := newState(t)
	v := eval(t, L, `(function()
		local t = {flags = {}, legs = {}}
		for i = 1, 50 do t.flags["k" .. i] = i % 2 == 0; t.legs[i] = {x = i} end
		return t
	end)()`)
	first, err := p.Encode(L, msgMove, v)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		b, err := p.Encode(L, msgMove, v)
		if err != nil || !bytes.Equal(b, first) {
			t.Fatalf("encodings differ: %x vs %x (%v)", b, first, err)
		}
	}
}

// TestProtobufShapesLeaveTablesAlone: deciding an empty table is a list
// does not mark it, so the same table still encodes as {} in JSON.
func TestProtobufShapesLeaveTablesAlone(t *testing.T) {
	p := loadTestProtobuf(t)
	L := newState(t)
	v := eval(t, L, `{legs = {}, flags = {true}}`).(*lua.LTable)
	if _, err := p.Encode(L, msgMove, v); err != nil {
		t.Fatal(err)
	}
	js, err := AppendJSON(nil, L, v)
	if err != nil {
		t.Fatal(err)
	}
	if string(js) != `{"flags":[true],"legs":{}}` {
		t.Errorf("JSON after a protobuf encode: %s", js)
	}
}

// TestProtobufSelfReference: a table that contains itself is an error, not
// a hang, even where the message walk would follow it.
func TestProtobufSelfReference(t *testing.T) {
	p := loadTestProtobuf(t)
	L := newState(t)
	v := eval(t, L, `(function() local n = {name = "loop"}; n.children = {n, n}; return {inner = n} end)()`)
	_, err := p.Encode(L, msgEverything, v)
	if err == nil || !strings.Contains(err.Error(), "table contains itself") {
		t.Fatalf("error %v", err)
	}
}

func TestProtobufResolve(t *testing.T) {
	p := loadTestProtobuf(t)
	for _, name := range []string{msgMove, msgLegacy, "shield.codectest.Everything.Inner", "google.protobuf.Timestamp"} {
		if err := p.Resolve(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"", "Move", ".shield.codectest.Move", "shield.codectest.Facing", "shield.codectest.Move.FlagsEntry", "shield.codectest"} {
		err := p.Resolve(name)
		if !errors.Is(err, ErrNoMessage) || !strings.Contains(err.Error(), testSet) {
			t.Errorf("%q: %v", name, err)
		}
	}
}

func TestProtobufName(t *testing.T) {
	p := loadTestProtobuf(t)
	q := p.WithName("protobuf/game")
	if p.Name() != ProtobufName || q.Name() != "protobuf/game" || q.Source() != testSet {
		t.Fatalf("names %q %q, source %q", p.Name(), q.Name(), q.Source())
	}
	Register(q)
	if c, ok := Lookup("protobuf/game"); !ok || c != Codec(q) {
		t.Fatal("not registered under its name")
	}
}

func TestNewProtobufErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pb")
	if err := os.WriteFile(garbage, []byte("not a descriptor set"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The set without the well-known types' files codectest.proto imports:
	// what protoc writes without --include_imports.
	data, err := os.ReadFile(testSet)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	var own []*descriptorpb.FileDescriptorProto
	for _, f := range set.File {
		if !strings.HasPrefix(f.GetName(), "google/") {
			own = append(own, f)
		}
	}
	set.File = own
	data, err = proto.Marshal(&set)
	if err != nil {
		t.Fatal(err)
	}
	noImports := filepath.Join(dir, "no-imports.pb")
	if err := os.WriteFile(noImports, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.pb"), "no such file"},
		{garbage, "not a FileDescriptorSet"},
		{noImports, "--include_imports"},
	} {
		if _, err := NewProtobuf(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestProtobufConcurrentVMs: one codec serves every VM at once.
func TestProtobufConcurrentVMs(t *testing.T) {
	p := loadTestProtobuf(t)
	body := wire(t, p, msgMove, `{"player_id":"p-1","seq":"5","legs":[{"x":1}],"flags":{"a":true}}`)
	var wg sync.WaitGroup
	for range 4 {
		L := newState(t)
		wg.Go(func() {
			for range 200 {
				v, err := p.Decode(L, msgMove, body)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := p.Encode(L, msgMove, v)
				if err != nil || !bytes.Equal(b, body) {
					t.Errorf("re-encoded %x, %v", b, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
