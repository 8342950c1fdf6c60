package envelope

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestProtocolErrors gives every reason with the exact input that causes
// it, read as a stream with max_frame_bytes 64.
func TestProtocolErrors(t *testing.T) {
	const maxBytes = 64
	tests := []struct {
		name string
		env  string
		side Side
		in   string // hex, or text for the legacy envelopes when text is set
		text bool
		want Reason
	}{
		// bad_version
		{"idlen version 2", NameIdlen, FromClient, "00000008 02 000000 00000000", false, ReasonBadVersion},
		{"idlen version 0", NameIdlen, FromServer, "00000009 00 000001 00000000 ff", false, ReasonBadVersion},
		{"typelen version 2", NameTypelen, FromClient, "0000000c 02 05 0000 0000000000000000", false, ReasonBadVersion},
		// too_large
		{"idlen length max+1", NameIdlen, FromClient, "00000041", false, ReasonTooLarge},
		{"idlen length 0xffffffff", NameIdlen, FromClient, "ffffffff 01", false, ReasonTooLarge},
		{"typelen length max+1", NameTypelen, FromServer, "00000041", false, ReasonTooLarge},
		{"lenprefix length max+1", NameLenprefix, FromClient, "00000041 7b7d", false, ReasonTooLarge},
		{"delimiter line max+1", NameDelimiter, FromClient, `{"route_id":1,"payload":"` + strings.Repeat("a", 38) + `"}` + "\n", true, ReasonTooLarge},
		{"delimiter endless line", NameDelimiter, FromClient, strings.Repeat("a", 1000), true, ReasonTooLarge},
		// too_short
		{"idlen length 7", NameIdlen, FromClient, "00000007 01 000000 000000", false, ReasonTooShort},
		{"idlen length 0", NameIdlen, FromServer, "00000000", false, ReasonTooShort},
		{"typelen length 11", NameTypelen, FromClient, "0000000b 01 05 0000 00000000000000", false, ReasonTooShort},
		{"lenprefix length 0", NameLenprefix, FromClient, "00000000", false, ReasonTooShort},
		// bad_system_frame
		{"idlen route 0 with request_id", NameIdlen, FromClient, "00000008 01 000000 00000001", false, ReasonBadSystemFrame},
		{"idlen heartbeat with body", NameIdlen, FromClient, "00000009 01 000000 00000000 00", false, ReasonBadSystemFrame},
		{"idlen error body not JSON", NameIdlen, FromServer, "0000000a 01 000000 00000001 6f6b", false, ReasonBadSystemFrame},
		{"idlen error without body", NameIdlen, FromServer, "00000008 01 000000 00000001", false, ReasonBadSystemFrame},
		{"idlen notice code not string", NameIdlen, FromServer, "00000012 01 000000 00000000" + hexOf(`{"code":1}`), false, ReasonBadSystemFrame},
		{"idlen error retry_after_ms negative", NameIdlen, FromServer, "00000028 01 000000 00000001" + hexOf(`{"code":"a","retry_after_ms":-1}`), false, ReasonBadSystemFrame},
		{"typelen request request_id 0", NameTypelen, FromClient, "0000000c 01 01 0001 0000000000000000", false, ReasonBadSystemFrame},
		{"typelen request route 0", NameTypelen, FromClient, "0000000c 01 01 0000 0000000000000001", false, ReasonBadSystemFrame},
		{"typelen notify route 0", NameTypelen, FromClient, "0000000c 01 07 0000 0000000000000000", false, ReasonBadSystemFrame},
		{"typelen heartbeat with body", NameTypelen, FromClient, "0000000d 01 05 0000 0000000000000000 00", false, ReasonBadSystemFrame},
		{"typelen heartbeat on a route", NameTypelen, FromServer, "0000000c 01 05 0001 0000000000000000", false, ReasonBadSystemFrame},
		{"typelen notice body not object", NameTypelen, FromServer, "0000000e 01 06 0000 0000000000000000 5b5d", false, ReasonBadSystemFrame},
		// bad_type
		{"typelen response from client", NameTypelen, FromClient, "0000000c 01 02 0001 0000000000000001", false, ReasonBadType},
		{"typelen error from client", NameTypelen, FromClient, "0000000c 01 03 0001 0000000000000001", false, ReasonBadType},
		{"typelen push from client", NameTypelen, FromClient, "0000000c 01 04 0001 0000000000000000", false, ReasonBadType},
		{"typelen notice from client", NameTypelen, FromClient, "0000000c 01 06 0000 0000000000000000", false, ReasonBadType},
		{"typelen type 0", NameTypelen, FromClient, "0000000c 01 00 0001 0000000000000001", false, ReasonBadType},
		{"typelen type 8", NameTypelen, FromServer, "0000000c 01 08 0001 0000000000000001", false, ReasonBadType},
		{"typelen request from server", NameTypelen, FromServer, "0000000c 01 01 0001 0000000000000001", false, ReasonBadType},
		{"lenprefix response from client", NameLenprefix, FromClient, "00000013" + hexOf(`{"type":"response"}`), false, ReasonBadType},
		{"delimiter push from client", NameDelimiter, FromClient, `{"type":"push","route_id":1}` + "\n", true, ReasonBadType},
		{"delimiter notice from client", NameDelimiter, FromClient, `{"type":"notice"}` + "\n", true, ReasonBadType},
		{"delimiter request from server", NameDelimiter, FromServer, `{"type":"request","route_id":1,"request_id":1}` + "\n", true, ReasonBadType},
		{"delimiter untyped from server", NameDelimiter, FromServer, `{"route_id":1}` + "\n", true, ReasonBadType},
		// bad_wrapper
		{"lenprefix not JSON", NameLenprefix, FromClient, "00000003 6e6f7e", false, ReasonBadWrapper},
		{"lenprefix array", NameLenprefix, FromClient, "00000002 5b5d", false, ReasonBadWrapper},
		{"delimiter empty line", NameDelimiter, FromClient, "\n", true, ReasonBadWrapper},
		{"delimiter null", NameDelimiter, FromClient, "null\n", true, ReasonBadWrapper},
		{"delimiter string", NameDelimiter, FromClient, `"x"` + "\n", true, ReasonBadWrapper},
		{"delimiter two objects", NameDelimiter, FromClient, `{}{}` + "\n", true, ReasonBadWrapper},
		{"delimiter type number", NameDelimiter, FromClient, `{"type":1,"route_id":1}` + "\n", true, ReasonBadWrapper},
		{"delimiter type unknown", NameDelimiter, FromClient, `{"type":"call","route_id":1}` + "\n", true, ReasonBadWrapper},
		{"delimiter route number", NameDelimiter, FromClient, `{"route":1}` + "\n", true, ReasonBadWrapper},
		{"delimiter route_id string", NameDelimiter, FromClient, `{"route_id":"1"}` + "\n", true, ReasonBadWrapper},
		{"delimiter route_id negative", NameDelimiter, FromClient, `{"route_id":-1}` + "\n", true, ReasonBadWrapper},
		{"delimiter route_id fraction", NameDelimiter, FromClient, `{"route_id":1.5}` + "\n", true, ReasonBadWrapper},
		{"delimiter route_id exponent", NameDelimiter, FromClient, `{"route_id":1e3}` + "\n", true, ReasonBadWrapper},
		{"delimiter route_id above u32", NameDelimiter, FromClient, `{"route_id":4294967296}` + "\n", true, ReasonBadWrapper},
		{"delimiter request_id above u64", NameDelimiter, FromClient, `{"route_id":1,"request_id":18446744073709551616}` + "\n", true, ReasonBadWrapper},
		{"delimiter request_id bool", NameDelimiter, FromClient, `{"route_id":1,"request_id":true}` + "\n", true, ReasonBadWrapper},
		{"delimiter code object", NameDelimiter, FromServer, `{"type":"notice","code":{}}` + "\n", true, ReasonBadWrapper},
		{"delimiter message number", NameDelimiter, FromServer, `{"type":"error","message":3}` + "\n", true, ReasonBadWrapper},
		{"delimiter retry_after_ms string", NameDelimiter, FromServer, `{"type":"error","retry_after_ms":"1"}` + "\n", true, ReasonBadWrapper},
		{"delimiter request without request_id", NameDelimiter, FromClient, `{"type":"request","route_id":1}` + "\n", true, ReasonBadWrapper},
		{"delimiter request without route", NameDelimiter, FromClient, `{"type":"request","request_id":1}` + "\n", true, ReasonBadWrapper},
		{"delimiter notify without route", NameDelimiter, FromClient, `{"payload":1}` + "\n", true, ReasonBadWrapper},
		{"delimiter bad JSON", NameDelimiter, FromClient, `{"route_id":1,}` + "\n", true, ReasonBadWrapper},
		// truncated
		{"idlen 3 length bytes", NameIdlen, FromClient, "000000", false, ReasonTruncated},
		{"idlen partial header", NameIdlen, FromClient, "00000008 01 0000", false, ReasonTruncated},
		{"idlen length only", NameIdlen, FromClient, "00000008", false, ReasonTruncated},
		{"idlen partial body", NameIdlen, FromClient, "0000000c 01 000001 00000001 6162", false, ReasonTruncated},
		{"typelen partial header", NameTypelen, FromServer, "0000000c 01 05 00", false, ReasonTruncated},
		{"typelen no body", NameTypelen, FromServer, "0000000d 01 02 0001 0000000000000001", false, ReasonTruncated},
		{"lenprefix partial wrapper", NameLenprefix, FromClient, "00000014 7b2274", false, ReasonTruncated},
		{"delimiter line without newline", NameDelimiter, FromClient, `{"type":"heartbeat"}`, true, ReasonTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if !tt.text {
				in = hx(t, tt.in)
			}
			c := mustNew(t, tt.env, tt.side, maxBytes)
			for _, size := range []int{16, 4096} {
				f, err := Read(c, bufio.NewReaderSize(bytes.NewReader(in), size))
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Reason != tt.want {
					t.Fatalf("bufio %d: ReadFrame(% x) = %+v, %v; want %s", size, in, f, err, tt.want)
				}
				if !errors.Is(err, &ProtocolError{Reason: tt.want}) {
					t.Fatalf("errors.Is does not match reason %s: %v", tt.want, err)
				}
			}
		})
	}
}

// TestMessageErrors checks the limits and rules on WebSocket messages.
func TestMessageErrors(t *testing.T) {
	tests := []struct {
		env  string
		side Side
		msg  []byte
		want Reason
	}{
		{NameIdlen, FromClient, make([]byte, 7), ReasonTooShort},
		{NameIdlen, FromClient, append([]byte{1}, make([]byte, 64)...), ReasonTooLarge},
		{NameIdlen, FromClient, []byte{2, 0, 0, 0, 0, 0, 0, 0}, ReasonBadVersion},
		{NameIdlen, FromClient, []byte{1, 0, 0, 0, 0, 0, 0, 1}, ReasonBadSystemFrame},
		{NameTypelen, FromClient, make([]byte, 11), ReasonTooShort},
		{NameTypelen, FromClient, make([]byte, 65), ReasonTooLarge},
		{NameTypelen, FromClient, []byte{1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, ReasonBadType},
		{NameLenprefix, FromClient, nil, ReasonTooShort},
		{NameLenprefix, FromClient, []byte(`{"route_id":1,"payload":"` + strings.Repeat("a", 40) + `"}`), ReasonTooLarge},
		{NameLenprefix, FromClient, []byte(`[]`), ReasonBadWrapper},
		{NameDelimiter, FromClient, nil, ReasonBadWrapper},
		{NameDelimiter, FromClient, make([]byte, 65), ReasonTooLarge},
		{NameDelimiter, FromServer, []byte(`{"type":"notify","route_id":1}`), ReasonBadType},
	}
	for _, tt := range tests {
		c := mustNew(t, tt.env, tt.side, 64)
		_, err := Decode(c, tt.msg)
		if r, ok := ReasonOf(err); !ok || r != tt.want {
			t.Errorf("%s %v DecodeMessage(% x) = %v, want %s", tt.env, tt.side, tt.msg, err, tt.want)
		}
	}
}

// TestCleanEOF checks that io.EOF comes only at a frame boundary.
func TestCleanEOF(t *testing.T) {
	for _, env := range envelopes {
		c := mustNew(t, env, FromClient, 1<<16)
		if _, err := Read(c, bufio.NewReader(bytes.NewReader(nil))); err != io.EOF {
			t.Errorf("%s: empty input: %v, want io.EOF", env, err)
		}
		hb, _ := c.AppendFrame(nil, &Frame{Kind: Heartbeat})
		r := bufio.NewReader(bytes.NewReader(hb))
		if _, err := Read(c, r); err != nil {
			t.Errorf("%s: heartbeat: %v", env, err)
		}
		if _, err := Read(c, r); err != io.EOF {
			t.Errorf("%s: after a frame: %v, want io.EOF", env, err)
		}
	}
}

// failReader yields data, then err.
type failReader struct {
	data []byte
	err  error
}

func (f *failReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestReadErrorsPassThrough checks that a deadline or a closed connection
// reaches the caller as itself, at a boundary and inside a frame, and is not
// counted as a protocol error.
func TestReadErrorsPassThrough(t *testing.T) {
	deadline := fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded)
	for _, env := range envelopes {
		c := mustNew(t, env, FromClient, 1<<16)
		frame, _ := c.AppendFrame(nil, &Frame{Kind: Request, RouteID: 3, RequestID: 4, Body: []byte(`{"long":"` + strings.Repeat("b", 100) + `"}`)})
		for _, cut := range []int{0, 2, 6, 13, len(frame) - 1} {
			r := bufio.NewReaderSize(&failReader{data: frame[:cut], err: deadline}, 16)
			_, err := Read(c, r)
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s cut %d: %v, want the deadline error", env, cut, err)
			}
			if _, ok := ReasonOf(err); ok {
				t.Errorf("%s cut %d: deadline reported as a protocol error: %v", env, cut, err)
			}
		}
	}
}

// TestHugeLengthDoesNotAllocate checks that a length of 0xFFFFFFFF is
// refused from its four bytes, with no allocation of anything like its size.
func TestHugeLengthDoesNotAllocate(t *testing.T) {
	in := hx(t, "ffffffff 01 000001 00000001")
	for _, env := range []string{NameIdlen, NameTypelen, NameLenprefix} {
		c := mustNew(t, env, FromClient, 1<<16)
		var src bytes.Reader
		r := bufio.NewReader(&src)
		run := func() {
			src.Reset(in)
			r.Reset(&src)
			if _, err := Read(c, r); !errors.Is(err, &ProtocolError{Reason: ReasonTooLarge}) {
				t.Fatalf("%s: %v, want too_large", env, err)
			}
		}
		allocs := testing.AllocsPerRun(100, run)
		const runs = 100
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			run()
		}
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / runs
		t.Logf("%s: %.0f allocs, %d bytes per rejected frame", env, allocs, perRun)
		if perRun >= 1024 {
			t.Errorf("%s: %d bytes allocated per rejected frame, want < 1 KiB", env, perRun)
		}
	}
}

// countingReader counts the bytes taken from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// endless yields the same byte forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// TestDelimiterLongLineIsBounded checks that an endless line is refused
// after about max_frame_bytes, without buffering the line.
func TestDelimiterLongLineIsBounded(t *testing.T) {
	const maxBytes = 1 << 16
	c := mustNew(t, NameDelimiter, FromClient, maxBytes)
	src := &countingReader{r: endless('a')}
	r := bufio.NewReaderSize(src, 4096)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Read(c, r)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, &ProtocolError{Reason: ReasonTooLarge}) {
		t.Fatalf("endless line: %v, want too_large", err)
	}
	if src.n > maxBytes+4096 {
		t.Errorf("read %d bytes of the line, want at most max_frame_bytes plus one buffer", src.n)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*maxBytes {
		t.Errorf("allocated %d bytes for a refused line, want about max_frame_bytes", grew)
	}
}

// TestDelimiterExactLimit checks that a line of exactly max_frame_bytes is
// accepted, in one buffer and across several.
func TestDelimiterExactLimit(t *testing.T) {
	line := `{"route_id":1,"payload":"` + strings.Repeat("z", 70) + `"}`
	c := mustNew(t, NameDelimiter, FromClient, len(line))
	for _, size := range []int{16, 4096} {
		f, err := Read(c, bufio.NewReaderSize(strings.NewReader(line+"\n"), size))
		if err != nil || f.Kind != Notify || len(f.Body) != 72 {
			t.Errorf("bufio %d: %+v, %v", size, f, err)
		}
	}
}

// TestLengthLimitInclusive checks that max_frame_bytes itself is allowed and
// one byte more is not, for the length-prefixed envelopes.
func TestLengthLimitInclusive(t *testing.T) {
	const maxBytes = 64
	frames := map[string]Frame{
		NameIdlen:     {Kind: Notify, RouteID: 1, Body: bytes.Repeat([]byte{'a'}, maxBytes-IdlenHeaderSize)},
		NameTypelen:   {Kind: Notify, RouteID: 1, Body: bytes.Repeat([]byte{'a'}, maxBytes-TypelenHeaderSize)},
		NameLenprefix: {Kind: Notify, RouteID: 1, Body: []byte(`"` + strings.Repeat("a", maxBytes-len(`{"type":"notify","route_id":1,"payload":""}`)) + `"`)},
	}
	for env, f := range frames {
		c := mustNew(t, env, FromClient, maxBytes)
		wire, err := c.AppendFrame(nil, &f)
		if err != nil || len(wire) != LengthSize+maxBytes {
			t.Fatalf("%s: %d bytes, %v; want a frame of exactly the limit", env, len(wire), err)
		}
		if _, err := Read(c, bufio.NewReader(bytes.NewReader(wire))); err != nil {
			t.Errorf("%s: frame of exactly max_frame_bytes: %v", env, err)
		}
		tight := mustNew(t, env, FromClient, maxBytes-1)
		if _, err := Read(tight, bufio.NewReader(bytes.NewReader(wire))); !errors.Is(err, &ProtocolError{Reason: ReasonTooLarge}) {
			t.Errorf("%s: frame one byte over: %v, want too_large", env, err)
		}
	}
}
