package codec

import (
	"bytes"
	"encoding/json"
	"testing"
)

// moveMessage is a typical hot-path body (~200 bytes).
const moveMessage = `{"player_id":"p-1042","seq":18231,"x":1024.5,"y":-33.25,"z":0,"facing":"north","legs":[{"x":1,"y":2},{"x":3,"y":4}],"flags":{"run":true,"jump":false},"room":"r-17"}`

func BenchmarkDecodeJSON(b *testing.B) { benchDecode(b, moveMessage) }

func BenchmarkAppendJSON(b *testing.B) { benchAppend(b, moveMessage) }

// echoMessage is bench.JSONBody, the JSON echo's body in BENCHMARKS.md:
// a string, an integer and two short decimals.
const echoMessage = `{"player_id":"p-1042","seq":18231,"x":1024.5,"y":-33.25}`

func BenchmarkDecodeJSONEcho(b *testing.B) { benchDecode(b, echoMessage) }

func BenchmarkAppendJSONEcho(b *testing.B) { benchAppend(b, echoMessage) }

// benchDecode decodes msg into a fresh value each time.
func benchDecode(b *testing.B, msg string) {
	L := newState(b)
	data := []byte(msg)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJSON(L, data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAppend encodes msg's value into a reused buffer.
func benchAppend(b *testing.B, msg string) {
	L := newState(b)
	v, err := DecodeJSON(L, []byte(msg))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 512)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = AppendJSON(buf[:0], L, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecEncode is the runtime's path: a new, exactly sized body.
func BenchmarkCodecEncode(b *testing.B) {
	L := newState(b)
	c, _ := Lookup(JSONName)
	v, err := c.Decode(L, "", []byte(moveMessage))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(moveMessage)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(L, "", v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnwrapLegacyMiss(b *testing.B) {
	data := []byte(moveMessage)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := UnwrapLegacy(data); ok {
			b.Fatal("unwrapped")
		}
	}
}

// The same message through encoding/json and map[string]any, for scale.

func BenchmarkStdlibDecode(b *testing.B) {
	data := []byte(moveMessage)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdlibEncode(b *testing.B) {
	var v map[string]any
	if err := json.Unmarshal([]byte(moveMessage), &v); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	b.SetBytes(int64(len(moveMessage)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			b.Fatal(err)
		}
	}
}
