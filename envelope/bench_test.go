package envelope

import (
	"bufio"
	"bytes"
	"testing"
)

// loopReader yields the same bytes forever, so a benchmark reads frames
// without building a stream of b.N of them.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.data[l.off:])
		n += c
		l.off = (l.off + c) % len(l.data)
	}
	return n, nil
}

// benchFrame is a request with a 64-byte body.
var benchFrame = Frame{Kind: Request, RouteID: 3001, RequestID: 5, Body: bytes.Repeat([]byte{'x'}, 64)}

// BenchmarkIdlenDecode reads a 64-byte-body idlen request from a stream.
func BenchmarkIdlenDecode(b *testing.B) {
	c := mustNew(b, NameIdlen, FromClient, 1<<16)
	wire, err := c.AppendFrame(nil, &benchFrame)
	if err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(&loopReader{data: wire})
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	var f Frame
	for b.Loop() {
		if err := c.ReadFrame(r, &f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdlenDecodeMessage decodes the same frame as a WebSocket message.
func BenchmarkIdlenDecodeMessage(b *testing.B) {
	c := mustNew(b, NameIdlen, FromClient, 1<<16)
	msg, err := c.AppendMessage(nil, &benchFrame)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	var f Frame
	for b.Loop() {
		if err := c.DecodeMessage(msg, &f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdlenEncode appends a 64-byte-body idlen response to a reused buffer.
func BenchmarkIdlenEncode(b *testing.B) {
	c := mustNew(b, NameIdlen, FromServer, 1<<16)
	f := benchFrame
	f.Kind = Response
	dst := make([]byte, 0, 256)
	b.SetBytes(int64(LengthSize + IdlenHeaderSize + len(f.Body)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = c.AppendFrame(dst[:0], &f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdlenEncodeError appends an idlen error, whose status body is built as JSON.
func BenchmarkIdlenEncodeError(b *testing.B) {
	c := mustNew(b, NameIdlen, FromServer, 1<<16)
	f := Frame{Kind: Error, RequestID: 5, Code: "client_rpc.busy", Message: "session has 32 requests in flight"}
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = c.AppendFrame(dst[:0], &f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDelimiterDecode reads a legacy wrapper line: the encoding/json path.
func BenchmarkDelimiterDecode(b *testing.B) {
	c := mustNew(b, NameDelimiter, FromClient, 1<<16)
	f := Frame{Kind: Request, Route: "move", RouteID: 3001, RequestID: 5, Body: []byte(`{"x":1,"y":2,"path":[1,2,3,4,5,6,7,8,9,10]}`)}
	wire, err := c.AppendFrame(nil, &f)
	if err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(&loopReader{data: wire})
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	var got Frame
	for b.Loop() {
		if err := c.ReadFrame(r, &got); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDelimiterEncode appends a legacy wrapper line.
func BenchmarkDelimiterEncode(b *testing.B) {
	c := mustNew(b, NameDelimiter, FromServer, 1<<16)
	f := Frame{Kind: Response, Route: "move", RouteID: 3001, RequestID: 5, Body: []byte(`{"x":1,"y":2,"path":[1,2,3,4,5,6,7,8,9,10]}`)}
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = c.AppendFrame(dst[:0], &f); err != nil {
			b.Fatal(err)
		}
	}
}
