package envelope

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

var envelopes = []string{NameIdlen, NameTypelen, NameLenprefix, NameDelimiter}

// clientFrames are what a client sends, server frames what the gateway
// sends; bodies are JSON so that every envelope can carry them.
var (
	clientFrames = []Frame{
		{Kind: Request, RouteID: 3001, RequestID: 5, Route: "move", Body: []byte(`{"x":1}`)},
		{Kind: Request, RouteID: 1, RequestID: math.MaxUint32, Route: "a", Body: []byte(`"\u2028 é"`)},
		{Kind: Request, RouteID: 7, RequestID: 9},
		{Kind: Notify, RouteID: 3002, Route: "chat", Body: []byte(`{"text":"hi\n"}`)},
		{Kind: Notify, RouteID: 12},
		{Kind: Heartbeat},
	}
	serverFrames = []Frame{
		{Kind: Response, RouteID: 3001, RequestID: 5, Route: "move", Body: []byte(`{"ok":true}`)},
		{Kind: Response, RouteID: 3001, RequestID: 6, Route: "move"},
		{Kind: Push, RouteID: 2001, Route: "login_result", Body: []byte(`[1,null,"x"]`)},
		{Kind: Push, RouteID: 2002, Body: []byte(`null`)},
		{Kind: Error, RouteID: 3001, RequestID: 5, Route: "move", Code: "client_rpc.busy", Message: "queue \"full\"\n<x>"},
		{Kind: Error, RouteID: 1, RequestID: 1, Code: "game.no_gold"},
		{Kind: Notice, Code: "session.kicked", Message: "duplicate login"},
		{Kind: Notice},
		{Kind: Heartbeat},
	}
)

// expected is what f becomes after a trip through env: the header
// envelopes carry no route name, and idlen's errors are on route 0.
func expected(env string, f Frame) Frame {
	if env == NameIdlen || env == NameTypelen {
		f.Route = ""
		if env == NameIdlen && f.Kind == Error {
			f.RouteID = 0
		}
	}
	return f
}

// TestRoundTrip encodes every kind on every envelope and decodes it with
// the matching side, as a stream (whole, and one byte at a time) and as
// messages.
func TestRoundTrip(t *testing.T) {
	for _, env := range envelopes {
		for _, dir := range []struct {
			side   Side
			frames []Frame
		}{{FromClient, clientFrames}, {FromServer, serverFrames}} {
			c := mustNew(t, env, dir.side, 1<<16)
			t.Run(env+"/"+dir.side.String(), func(t *testing.T) {
				var stream []byte
				for _, f := range dir.frames {
					var err error
					if stream, err = c.AppendFrame(stream, &f); err != nil {
						t.Fatalf("AppendFrame(%+v): %v", f, err)
					}
					msg, err := c.AppendMessage(nil, &f)
					if err != nil {
						t.Fatalf("AppendMessage(%+v): %v", f, err)
					}
					got, err := Decode(c, msg)
					if err != nil || !sameFrame(got, expected(env, f)) {
						t.Fatalf("DecodeMessage(%q) = %+v, %v; want %+v", msg, got, err, expected(env, f))
					}
				}
				for name, r := range map[string]io.Reader{
					"whole":   bytes.NewReader(stream),
					"onebyte": iotest.OneByteReader(bytes.NewReader(stream)),
					"half":    iotest.HalfReader(bytes.NewReader(stream)),
				} {
					frames, err := readAll(c, bufio.NewReaderSize(r, 16))
					if err != io.EOF {
						t.Fatalf("%s: stream ended with %v, want io.EOF", name, err)
					}
					if len(frames) != len(dir.frames) {
						t.Fatalf("%s: read %d frames, want %d", name, len(frames), len(dir.frames))
					}
					for i, f := range frames {
						if want := expected(env, dir.frames[i]); !sameFrame(f, want) {
							t.Fatalf("%s: frame %d = %+v, want %+v", name, i, f, want)
						}
					}
				}
			})
		}
	}
}

// TestAppendFrameIsPrefixedMessage checks that the stream framing is only a
// length prefix (or a newline) around the message: the WebSocket transport
// relies on it.
func TestAppendFrameIsPrefixedMessage(t *testing.T) {
	for _, env := range envelopes {
		c := mustNew(t, env, FromClient, 1<<16)
		for _, f := range append(append([]Frame{}, clientFrames...), serverFrames...) {
			frame, err1 := c.AppendFrame([]byte("keep"), &f)
			msg, err2 := c.AppendMessage(nil, &f)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s %+v: %v, %v", env, f, err1, err2)
			}
			var want []byte
			if env == NameDelimiter {
				want = append(append([]byte("keep"), msg...), '\n')
			} else {
				want = append([]byte("keep"), 0, 0, byte(len(msg)>>8), byte(len(msg)))
				want = append(want, msg...)
			}
			if !bytes.Equal(frame, want) {
				t.Fatalf("%s %+v:\nframe % x\n want % x", env, f, frame, want)
			}
		}
	}
}

// TestDecodeMessageDoesNotAlias checks that a decoded Body survives the
// caller reusing its buffer, as a WebSocket reader does.
func TestDecodeMessageDoesNotAlias(t *testing.T) {
	for _, env := range envelopes {
		c := mustNew(t, env, FromClient, 1<<16)
		in := Frame{Kind: Request, RouteID: 3, RequestID: 4, Body: []byte(`{"k":"v"}`)}
		msg, _ := c.AppendMessage(nil, &in)
		f, err := Decode(c, msg)
		if err != nil {
			t.Fatalf("%s: %v", env, err)
		}
		for i := range msg {
			msg[i] = 'Z'
		}
		if string(f.Body) != `{"k":"v"}` {
			t.Fatalf("%s: Body changed with the message buffer: %q", env, f.Body)
		}
	}
}

// TestDecodeIntoUsedFrame reads every server frame, then a frame that
// breaks a rule, into one Frame, as the gateway's read loop does: each read
// sets the whole Frame (nothing of the one before survives), and a failed
// one leaves the zero Frame.
func TestDecodeIntoUsedFrame(t *testing.T) {
	for _, env := range envelopes {
		c := mustNew(t, env, FromServer, 1<<16)
		var stream []byte
		var f Frame
		for i := range serverFrames {
			msg, err := c.AppendMessage(nil, &serverFrames[i])
			if err != nil {
				t.Fatalf("%s: %v", env, err)
			}
			if err := c.DecodeMessage(msg, &f); err != nil || !sameFrame(f, expected(env, serverFrames[i])) {
				t.Fatalf("%s: DecodeMessage after a used Frame = %+v, %v; want %+v", env, f, err, expected(env, serverFrames[i]))
			}
			stream, _ = c.AppendFrame(stream, &serverFrames[i])
		}
		if err := c.DecodeMessage([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, &f); err == nil || !sameFrame(f, Frame{}) {
			t.Fatalf("%s: a bad message left %+v, %v; want the zero Frame and an error", env, f, err)
		}
		r := bufio.NewReader(bytes.NewReader(append(stream, 0, 0, 0)))
		for i := range serverFrames {
			if err := c.ReadFrame(r, &f); err != nil || !sameFrame(f, expected(env, serverFrames[i])) {
				t.Fatalf("%s: ReadFrame after a used Frame = %+v, %v; want %+v", env, f, err, expected(env, serverFrames[i]))
			}
		}
		if err := c.ReadFrame(r, &f); err == nil || !sameFrame(f, Frame{}) {
			t.Fatalf("%s: a truncated frame left %+v, %v; want the zero Frame and an error", env, f, err)
		}
	}
}

// TestLegacyDecode covers the wrapper rules SPEC.md states in prose.
func TestLegacyDecode(t *testing.T) {
	tests := []struct {
		side Side
		in   string
		want Frame
	}{
		{FromClient, `{"type":"request","route":"move","route_id":3001,"request_id":5,"payload":{"x":1}}`,
			Frame{Kind: Request, Route: "move", RouteID: 3001, RequestID: 5, Body: []byte(`{"x":1}`)}},
		// type missing: request when request_id > 0, else notify.
		{FromClient, `{"route_id":3001,"request_id":5}`, Frame{Kind: Request, RouteID: 3001, RequestID: 5}},
		{FromClient, `{"route":"move","payload":[]}`, Frame{Kind: Notify, Route: "move", Body: []byte(`[]`)}},
		{FromClient, `{"route_id":3001,"request_id":0}`, Frame{Kind: Notify, RouteID: 3001}},
		// a notify's request_id is ignored.
		{FromClient, `{"type":"notify","route_id":3,"request_id":9}`, Frame{Kind: Notify, RouteID: 3}},
		// route only: RouteID 0, the gateway resolves the name.
		{FromClient, `{"type":"request","route":"login","request_id":1}`, Frame{Kind: Request, Route: "login", RequestID: 1}},
		// unknown keys and nulls are ignored; a null payload is kept as JSON.
		{FromClient, ` {"type":"notify","route_id":3,"trace":{"id":1},"route":null,"payload":null} ` + "\r",
			Frame{Kind: Notify, RouteID: 3, Body: []byte(`null`)}},
		// a heartbeat keeps nothing else.
		{FromClient, `{"type":"heartbeat","route_id":5,"payload":1}`, Frame{Kind: Heartbeat}},
		{FromClient, `{"type":"request","route_id":1,"request_id":18446744073709551615}`,
			Frame{Kind: Request, RouteID: 1, RequestID: math.MaxUint64}},
		// payload whitespace inside is kept byte for byte.
		{FromClient, `{"route_id":1,"payload": { "a" : [ 1 ,2 ] } }`,
			Frame{Kind: Notify, RouteID: 1, Body: []byte(`{ "a" : [ 1 ,2 ] }`)}},
		{FromServer, `{"type":"error","route":"m","route_id":3,"request_id":4,"code":"c.d","message":"\u003c"}`,
			Frame{Kind: Error, Route: "m", RouteID: 3, RequestID: 4, Code: "c.d", Message: "<"}},
		{FromServer, `{"type":"notice","route_id":3,"code":"session.kicked","message":""}`,
			Frame{Kind: Notice, Code: "session.kicked"}},
		{FromServer, `{"type":"response","route_id":3,"request_id":4}`, Frame{Kind: Response, RouteID: 3, RequestID: 4}},
	}
	for _, tt := range tests {
		for _, env := range []string{NameLenprefix, NameDelimiter} {
			c := mustNew(t, env, tt.side, 1<<16)
			got, err := Decode(c, []byte(tt.in))
			if err != nil || !sameFrame(got, tt.want) {
				t.Errorf("%s %v DecodeMessage(%s) = %+v, %v; want %+v", env, tt.side, tt.in, got, err, tt.want)
			}
		}
	}
}

// TestDelimiterPayloadStaysOneLine checks that a pretty-printed payload is
// written on one line and still means the same JSON.
func TestDelimiterPayloadStaysOneLine(t *testing.T) {
	c := mustNew(t, NameDelimiter, FromServer, 1<<16)
	body := []byte("{\n  \"a\": [1,\n 2],\n  \"s\": \"x\\ny\"\n}\n")
	out, err := c.AppendFrame(nil, &Frame{Kind: Push, RouteID: 9, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
		t.Fatalf("not one line: %q", out)
	}
	f, err := Read(c, bufio.NewReader(bytes.NewReader(out)))
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if json.Unmarshal(f.Body, &a) != nil || json.Unmarshal(body, &b) != nil || !jsonEqual(a, b) {
		t.Fatalf("payload changed meaning: %q -> %q", body, f.Body)
	}
}

// jsonEqual compares decoded JSON values.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestEncodeErrors lists the frames an envelope refuses to encode, because
// the peer would read them as something else or cannot hold them.
func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		env string
		f   Frame
	}{
		{NameIdlen, Frame{Kind: Request, RouteID: MaxIdlenRouteID + 1, RequestID: 1}},
		{NameIdlen, Frame{Kind: Request, RouteID: 1, RequestID: MaxIdlenRequestID + 1}},
		{NameIdlen, Frame{Kind: Request, RouteID: 0, RequestID: 1}},
		{NameIdlen, Frame{Kind: Response, RouteID: 1, RequestID: 0}},
		{NameIdlen, Frame{Kind: Push, RouteID: 0}},
		{NameIdlen, Frame{Kind: Notify, RouteID: 1 << 24}},
		{NameIdlen, Frame{Kind: Error, RequestID: 0}},
		{NameIdlen, Frame{Kind: Error, RequestID: 1 << 32}},
		{NameIdlen, Frame{Kind: 0}},
		{NameTypelen, Frame{Kind: Request, RouteID: 1 << 16, RequestID: 1}},
		{NameTypelen, Frame{Kind: Request, RouteID: 1, RequestID: 0}},
		{NameTypelen, Frame{Kind: Notify, RouteID: 0}},
		{NameTypelen, Frame{Kind: Push, RouteID: 70000}},
		{NameTypelen, Frame{Kind: 8}},
		{NameLenprefix, Frame{Kind: Request, RequestID: 1}},
		{NameLenprefix, Frame{Kind: Request, Route: "a"}},
		{NameLenprefix, Frame{Kind: Push, RouteID: 1, Body: []byte(`{`)}},
		{NameDelimiter, Frame{Kind: Notify}},
		{NameDelimiter, Frame{Kind: Response, Body: []byte("not json")}},
		{NameDelimiter, Frame{Kind: 9}},
	}
	for _, tt := range tests {
		c := mustNew(t, tt.env, FromClient, 1<<16)
		dst := []byte("prefix")
		out, err := c.AppendFrame(dst, &tt.f)
		if !errors.Is(err, ErrInvalidFrame) || string(out) != "prefix" {
			t.Errorf("%s AppendFrame(%+v) = %q, %v; want prefix, ErrInvalidFrame", tt.env, tt.f, out, err)
		}
		out, err = c.AppendMessage(dst, &tt.f)
		if !errors.Is(err, ErrInvalidFrame) || string(out) != "prefix" {
			t.Errorf("%s AppendMessage(%+v) = %q, %v; want prefix, ErrInvalidFrame", tt.env, tt.f, out, err)
		}
	}
}

// TestAppendJSONStringMatchesEncodingJSON checks the hand-written string
// escaper against encoding/json without HTML escaping.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x01\b\f\n\r\t\x1f\x7f", "<&>", "\u2028\u2029",
		"é中😀", "bad\xff\xfeutf8", "\xed\xa0\x80", strings.Repeat("a\"", 40)} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := string(appendJSONString(nil, s)); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestNew covers the constructor's checks and the envelopes' properties.
func TestNew(t *testing.T) {
	if _, err := New("json", FromClient, 1024); !errors.Is(err, ErrUnknownEnvelope) {
		t.Errorf("unknown name: %v", err)
	}
	for _, bad := range []struct {
		env  string
		side Side
		max  int
	}{{NameIdlen, FromClient, 7}, {NameTypelen, FromClient, 11}, {NameLenprefix, FromServer, 0},
		{NameDelimiter, FromServer, -1}, {NameIdlen, 0, 1024}, {NameIdlen, 3, 1024}} {
		if _, err := New(bad.env, bad.side, bad.max); err == nil {
			t.Errorf("New(%s, %v, %d) succeeded", bad.env, bad.side, bad.max)
		}
	}
	props := map[string]struct {
		text, legacy bool
		maxRoute     uint32
	}{
		NameIdlen:     {false, false, 1<<24 - 1},
		NameTypelen:   {false, false, 1<<16 - 1},
		NameLenprefix: {false, true, math.MaxUint32},
		NameDelimiter: {true, true, math.MaxUint32},
	}
	for env, p := range props {
		c := mustNew(t, env, FromServer, 64)
		if c.Name() != env || c.Text() != p.text || c.Legacy() != p.legacy || c.MaxRouteID() != p.maxRoute {
			t.Errorf("%s: Name %q Text %v Legacy %v MaxRouteID %d", env, c.Name(), c.Text(), c.Legacy(), c.MaxRouteID())
		}
	}
}

// TestKindString checks the legacy names and the fallback.
func TestKindString(t *testing.T) {
	want := []string{"kind(0)", "request", "response", "error", "push", "heartbeat", "notice", "notify", "deadline", "kind(9)"}
	for k, w := range want {
		if got := Kind(k).String(); got != w {
			t.Errorf("Kind(%d) = %q, want %q", k, got, w)
		}
	}
}
