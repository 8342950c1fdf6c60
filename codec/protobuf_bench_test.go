package codec

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/shieldrpc/shield/descriptor"
)

// The benchmark move (moveMessage, ~200 bytes of JSON) as protobuf: the
// same fields in shield.codectest.Move, 97 bytes on the wire (164 as JSON).
const moveProtoJSON = `{"player_id":"p-1042","seq":"18231","x":1024.5,"y":-33.25,"z":0,"facing":"north","legs":[{"x":1,"y":2},{"x":3,"y":4}],"flags":{"run":true,"jump":false},"room":"r-17"}`

func BenchmarkProtobufDecode(b *testing.B) {
	p := loadTestProtobuf(b)
	L := newState(b)
	body := wire(b, p, msgMove, moveProtoJSON)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Decode(L, msgMove, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProtobufEncode(b *testing.B) {
	p := loadTestProtobuf(b)
	L := newState(b)
	body := wire(b, p, msgMove, moveProtoJSON)
	v, err := p.Decode(L, msgMove, body)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Encode(L, msgMove, v); err != nil {
			b.Fatal(err)
		}
	}
}

// The stages of BenchmarkProtobufDecode and Encode, to see where the time
// goes: the wire format alone, and protojson alone.

func BenchmarkProtobufStageUnmarshal(b *testing.B) {
	p := loadTestProtobuf(b)
	body := wire(b, p, msgMove, moveProtoJSON)
	mt, _ := p.messageType(msgMove)
	b.ReportAllocs()
	for b.Loop() {
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, mt.New().Interface()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProtobufStageMarshalJSON(b *testing.B) {
	p := loadTestProtobuf(b)
	mt, _ := p.messageType(msgMove)
	m := mt.New().Interface()
	if err := proto.Unmarshal(wire(b, p, msgMove, moveProtoJSON), m); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = (protojson.MarshalOptions{UseProtoNames: true}).MarshalAppend(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProtobufStageUnmarshalJSON(b *testing.B) {
	p := loadTestProtobuf(b)
	mt, _ := p.messageType(msgMove)
	js := []byte(moveProtoJSON)
	b.ReportAllocs()
	for b.Loop() {
		if err := protojson.Unmarshal(js, mt.New().Interface()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProtobufStageMarshal(b *testing.B) {
	p := loadTestProtobuf(b)
	mt, _ := p.messageType(msgMove)
	m := mt.New().Interface()
	if err := proto.Unmarshal(wire(b, p, msgMove, moveProtoJSON), m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (proto.MarshalOptions{Deterministic: true}).Marshal(m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawDecode(b *testing.B) {
	c, _ := Lookup(RawName)
	L := newState(b)
	body := []byte(moveMessage)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(L, "", body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawEncode(b *testing.B) {
	c, _ := Lookup(RawName)
	L := newState(b)
	v, _ := c.Decode(L, "", []byte(moveMessage))
	b.SetBytes(int64(len(moveMessage)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(L, "", v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchemaValidate is the cost a schema adds to a json request:
// parsing the move again with encoding/json and validating it.
func BenchmarkSchemaValidate(b *testing.B) {
	dir := writeSchemas(b, map[string]string{"move.json": `{
  "type": "object", "required": ["player_id", "x", "y"],
  "properties": {
    "player_id": {"type": "string", "maxLength": 64}, "seq": {"type": "integer"},
    "x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"},
    "facing": {"enum": ["north", "east", "south", "west"]},
    "legs": {"type": "array", "maxItems": 8, "items": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}},
    "flags": {"type": "object", "additionalProperties": {"type": "boolean"}},
    "room": {"type": "string"}
  }
}`})
	s, err := NewSchemas(dir, []descriptor.Route{route(1, "move", "")})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(moveMessage)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(1, body); err != nil {
			b.Fatal(err)
		}
	}
}
