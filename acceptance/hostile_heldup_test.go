package acceptance

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// What held up (issue 19): the red team's attacks that did not get past the
// gateway, each kept as a regression test against a real gateway over
// loopback: deep JSON and protobuf nesting, WebSocket fragments and
// headers, smuggling on the upgrade path, TLS and handshake floods, and
// number and UTF-8 edge cases. Each case ends by showing that the
// gateway still serves.

// echoRaw sends body to the echo route (the edge service's, requires_auth
// false) on a fresh idlen connection of s's listener and returns the
// answer frame.
func echoRaw(t *testing.T, s *tserver, listener string, body []byte) envelope.Frame {
	t.Helper()
	w := wiretest.Dial(t, listener, s.Addr(listener), "idlen")
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 1, Body: body})
	f, err := w.Next()
	if err != nil {
		t.Fatalf("echo of %d bytes: %v", len(body), err)
	}
	return f
}

// stillServes checks that a fresh session on listener is served.
func stillServes(t *testing.T, s *tserver, listener string) {
	t.Helper()
	var got json2
	call(t, s.dial(t, listener), rEcho, map[string]int{"alive": 1}, &got)
	if got["alive"] != float64(1) {
		t.Fatalf("echo after the attack: %v", got)
	}
}

// TestHeldDeepJSON: a body nested past the JSON depth limit (128) is no
// JSON to the service: it reaches the handler as the string it is (SPEC
// §2 request_codec), and a body at the limit decodes; an unclosed 60,000
// brackets is a string too. Nothing recurses 60,000 deep.
func TestHeldDeepJSON(t *testing.T) {
	s := startTransportEdge(t, "  auth_max_frame_bytes: 0", tlistener{transport: "tcp", envelope: "idlen"})
	nest := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name, body string
		want       string // the echo's body
	}{
		{"128 deep", nest(128), nest(128)},
		{"129 deep", nest(129), mustJSON(t, nest(129))},
		{"60,000 unclosed", strings.Repeat("[", 60000), mustJSON(t, strings.Repeat("[", 60000))},
		{"6,000 objects unclosed", strings.Repeat(`{"a":`, 6000), mustJSON(t, strings.Repeat(`{"a":`, 6000))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := echoRaw(t, s, "tcp_idlen", []byte(tc.body))
			if f.Kind != envelope.Response || string(f.Body) != tc.want {
				t.Fatalf("got %v %q (%d bytes), want the response %.80q", f.Kind, truncateBody(f.Body), len(f.Body), tc.want)
			}
		})
	}
	stillServes(t, s, "tcp_idlen")
}

// mustJSON is v encoded as JSON, without HTML escaping.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func truncateBody(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}

// TestHeldNumbersAndUTF8: numbers past float64 and int64, exact integers
// past 2^53, and strings that are not valid UTF-8 (raw bytes, overlong
// forms, lone surrogates) go through a service and back: each request is
// answered with valid JSON, as SPEC §8's mapping says, and the gateway
// serves on.
func TestHeldNumbersAndUTF8(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "tcp", envelope: "idlen"})
	for _, tc := range []struct {
		name, body string
		want       string     // the response's body, or
		code       codes.Code // the error's code
	}{
		{"2^53+1", `{"n":9007199254740993}`, `{"n":"9007199254740993"}`, ""},
		{"2^64", `{"n":18446744073709551616}`, `{"n":"18446744073709551616"}`, ""},
		{"-2^63-1", `{"n":-9223372036854775809}`, `{"n":"-9223372036854775809"}`, ""},
		{"1000 digits", `{"n":` + strings.Repeat("9", 1000) + `}`, `{"n":"` + strings.Repeat("9", 1000) + `"}`, ""},
		// Past float64: no JSON number, so the body is a string.
		{"1e400", `{"n":1e400}`, mustJSON(t, `{"n":1e400}`), ""},
		{"-1e400", `{"n":-1e400}`, mustJSON(t, `{"n":-1e400}`), ""},
		{"1e-400", `{"n":1e-400}`, `{"n":0}`, ""},
		{"-0", `{"n":-0}`, `{"n":0}`, ""},
		// Escapes that name no character become U+FFFD.
		{"a lone surrogate", `{"s":"\ud800"}`, "{\"s\":\"\ufffd\"}", ""},
		{"surrogates reversed", `{"s":"\udc00\ud800"}`, "{\"s\":\"\ufffd\ufffd\"}", ""},
		{"NUL", `{"s":"a\u0000b"}`, `{"s":"a\u0000b"}`, ""},
		{"emoji", `{"s":"😀"}`, `{"s":"😀"}`, ""},
		// Raw bytes that are not UTF-8: no JSON, so the body is a string,
		// and a string that is not UTF-8 cannot be encoded back (SPEC §8:
		// handler_failed, an incident, rate-limited in the log).
		{"raw 0xff", "{\"s\":\"a\xffb\"}", "", codes.HandlerFailed},
		{"overlong slash", "{\"s\":\"\xc0\xaf\"}", "", codes.HandlerFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := echoRaw(t, s, "tcp_idlen", []byte(tc.body))
			switch {
			case tc.code != "" && (f.Kind != envelope.Error || f.Code != string(tc.code)):
				t.Fatalf("got %v %s %q %q, want the error %s", f.Kind, f.Code, f.Message, f.Body, tc.code)
			case tc.code == "" && (f.Kind != envelope.Response || !json.Valid(f.Body) || string(f.Body) != tc.want):
				t.Fatalf("got %v %s %q %q, want the response %q", f.Kind, f.Code, f.Message, f.Body, tc.want)
			}
		})
	}
	stillServes(t, s, "tcp_idlen")
}

// TestHeldDeepProtobuf: on a protobuf listener, deeply nested unknown
// groups are refused by the wire decoder's recursion limit
// (decode_failed), unclosed ones too, and nested unknown length-delimited
// fields are dropped unread: the login sees an empty message. Nothing
// recurses tens of thousands deep.
func TestHeldDeepProtobuf(t *testing.T) {
	g := startCodecGame(t, codecGameConfig(t, false, codecListener{"pb", "idlen", "protobuf"})+"session: {auth_max_frame_bytes: 0}\n")
	const group, end, bytesField = 15<<3 | 3, 15<<3 | 4, 15<<3 | 2
	nestedBytes := []byte{}
	for range 2000 {
		nestedBytes = append(binary.AppendUvarint([]byte{bytesField}, uint64(len(nestedBytes))), nestedBytes...)
	}
	for _, tc := range []struct {
		name string
		body []byte
		code codes.Code
	}{
		{"30,000 nested groups", append(bytes.Repeat([]byte{group}, 30000), bytes.Repeat([]byte{end}, 30000)...), codes.DecodeFailed},
		{"60,000 unclosed groups", bytes.Repeat([]byte{group}, 60000), codes.DecodeFailed},
		{"2,000 nested bytes fields", nestedBytes, "auth.bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := wiretest.Dial(t, "pb", g.Addr("pb"), "idlen")
			w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeLogin, RequestID: 1, Body: tc.body})
			f, err := w.Next()
			if err != nil || f.Kind != envelope.Error || f.Code != string(tc.code) {
				t.Fatalf("%d bytes: %v %s %q %v, want the error %s", len(tc.body), f.Kind, f.Code, f.Message, err, tc.code)
			}
		})
	}
	pb := loadGameProto(t)
	resp := pbCall(t, g.dialCodec(t, "pb", "idlen"), routeLogin, pb.encode(t, "login", `{"user":"after"}`))
	if got := pb.decode(t, "login", resp); got != `{"player_id":"after"}` {
		t.Fatalf("a login after the attack: %s", got)
	}
}

// rawWS is a WebSocket connection written frame by frame, for what no
// library would send.
type rawWS struct {
	nc net.Conn
	br *bufio.Reader
}

// upgradeRequest is a WebSocket upgrade of path with extra header lines
// (each ending in CRLF), without its final CRLF.
func upgradeRequest(path, extra string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" + extra
}

// dialRawWS writes request (and then, in the same write, after) on a new
// connection to addr and reads the HTTP response; it returns the status
// and, for a 101, the connection to go on with.
func dialRawWS(t *testing.T, addr, request string, after []byte) (int, *rawWS) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(patience))
	if _, err := nc.Write(append([]byte(request+"\r\n"), after...)); err != nil {
		return 0, nil // the gateway gave up on the request as it came
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, nil
	}
	resp.Body.Close()
	return resp.StatusCode, &rawWS{nc: nc, br: br}
}

// wsFrame is a masked client frame.
func wsFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	f := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n < 1<<16:
		f = binary.BigEndian.AppendUint16(append(f, 0x80|126), uint16(n))
	default:
		f = binary.BigEndian.AppendUint64(append(f, 0x80|127), uint64(n))
	}
	mask := [4]byte{1, 2, 3, 4}
	f = append(f, mask[:]...)
	for i, c := range payload {
		f = append(f, c^mask[i%4])
	}
	return f
}

// fragments is msg as a binary message in fragments of size bytes (the
// last one shorter), with extra frames after the first fragment.
func fragments(msg []byte, size int, extra ...[]byte) []byte {
	var out []byte
	for i := 0; i < len(msg); i += size {
		op := byte(0)
		if i == 0 {
			op = 2
		}
		out = append(out, wsFrame(i+size >= len(msg), op, msg[i:min(i+size, len(msg))])...)
		if i == 0 {
			for _, e := range extra {
				out = append(out, e...)
			}
		}
	}
	return out
}

// next reads one server frame: its opcode and payload.
func (w *rawWS) next() (op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(w.br, h[:]); err != nil {
		return
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		_, err = io.ReadFull(w.br, l[:])
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, err = io.ReadFull(w.br, l[:])
		n = binary.BigEndian.Uint64(l[:])
	}
	if err != nil || n > 1<<20 {
		return 0, nil, fmt.Errorf("frame of %d bytes: %v", n, err)
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(w.br, payload)
	return h[0] & 0x0f, payload, err
}

// expect reads frames until one with opcode op, and returns its payload;
// it fails the test if the connection ends first.
func (w *rawWS) expect(t *testing.T, op byte) []byte {
	t.Helper()
	for {
		got, payload, err := w.next()
		if err != nil {
			t.Fatalf("waiting for opcode %d: %v", op, err)
		}
		if got == op {
			return payload
		}
		if got == 8 {
			t.Fatalf("waiting for opcode %d: closed with %x", op, payload)
		}
	}
}

// expectClose reads until the close frame and returns its status code
// (0 if the connection ended without one).
func (w *rawWS) expectClose(t *testing.T) int {
	t.Helper()
	for {
		op, payload, err := w.next()
		if err != nil {
			return 0
		}
		if op == 8 {
			if len(payload) < 2 {
				return 0
			}
			return int(binary.BigEndian.Uint16(payload))
		}
	}
}

// TestHeldWSFragments: a message in 1,000 one-byte fragments with a ping
// between them, or after 2,000 empty fragments, is one frame and is
// answered (the ping too); fragments that add up past max_frame_bytes, a
// frame header that claims 2^62 bytes, and each header a client may not
// send (a fragmented or oversized ping, a reserved opcode or RSV bit, an
// unmasked frame, a fragment out of order) close the connection with the
// right status and count the protocol error; and the gateway serves on.
func TestHeldWSFragments(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "ws", envelope: "idlen"})
	addr := s.Addr("ws_idlen")
	// The echo's answer is its request: a response keeps the route_id and
	// request_id, and the body comes back unchanged.
	echo := idlenMessage(rEcho, 7, []byte(`{"pad":"`+strings.Repeat("f", 990)+`"}`))
	answer := echo

	t.Run("1,000 fragments and a ping", func(t *testing.T) {
		code, w := dialRawWS(t, addr, upgradeRequest("/ws", ""), nil)
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: %d", code)
		}
		w.nc.Write(fragments(echo, 1, wsFrame(true, 9, []byte("ping"))))
		if got := w.expect(t, 10); string(got) != "ping" {
			t.Fatalf("pong %q", got)
		}
		if got := w.expect(t, 2); !bytes.Equal(got, answer) {
			t.Fatalf("answer %q", truncateBody(got))
		}
	})
	t.Run("2,000 empty fragments", func(t *testing.T) {
		code, w := dialRawWS(t, addr, upgradeRequest("/ws", ""), nil)
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: %d", code)
		}
		msg := wsFrame(false, 2, nil)
		for range 2000 {
			msg = append(msg, wsFrame(false, 0, nil)...)
		}
		w.nc.Write(append(msg, wsFrame(true, 0, echo)...))
		if got := w.expect(t, 2); !bytes.Equal(got, answer) {
			t.Fatalf("answer %q", truncateBody(got))
		}
	})
	good := wsFrame(true, 2, echo)
	for _, tc := range []struct {
		name   string
		frames []byte
		status int
		reason string // the protocol error counted, if any
	}{
		{"fragments past max_frame_bytes", fragments(make([]byte, 70<<10), 1<<10), 1009, "too_large"},
		{"a header claiming 2^62 bytes", append(binary.BigEndian.AppendUint64([]byte{0x82, 0xff}, 1<<62), 1, 2, 3, 4), 1009, "too_large"},
		// Headers RFC 6455 forbids a client: 1002, counted as bad_type.
		// (A frame before one reaches its handler, but the session closes
		// before the answer: a protocol error ends it at once.)
		{"a fragmented ping", wsFrame(false, 9, []byte("p")), 1002, "bad_type"},
		{"a ping of 126 bytes", wsFrame(true, 9, make([]byte, 126)), 1002, "bad_type"},
		{"a reserved opcode", wsFrame(true, 3, []byte("x")), 1002, "bad_type"},
		{"RSV1 (no compression negotiated)", append([]byte{0xc2, 0x81, 1, 2, 3, 4}, 'x'), 1002, "bad_type"},
		{"an unmasked frame", []byte{0x82, 0x01, 0x00}, 1002, "bad_type"},
		{"an unmasked frame after a good one", append(good, 0x82, 0x01, 0x00), 1002, "bad_type"},
		{"a continuation with no message open", append(good, wsFrame(true, 0, []byte("x"))...), 1002, "bad_type"},
		{"a message inside a fragmented one", append(wsFrame(false, 2, []byte("a")), good...), 1002, "bad_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n0 := s.ProtocolErrors(tc.reason)
			code, w := dialRawWS(t, addr, upgradeRequest("/ws", ""), nil)
			if code != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade: %d", code)
			}
			w.nc.Write(tc.frames)
			if got := w.expectClose(t); got != tc.status {
				t.Fatalf("closed with status %d, want %d", got, tc.status)
			}
			if tc.reason != "" {
				wiretest.Eventually(t, tc.reason+" counted", func() bool { return s.ProtocolErrors(tc.reason) == n0+1 })
			}
		})
	}
	stillServes(t, s, "ws_idlen")
}

// TestHeldWSFramesWithTheUpgrade: frames a client sends in the same write
// as its upgrade request, which the HTTP server reads into its buffer
// before the upgrade, are watched as the rest: a good one is answered,
// even with "\r\n\r\n" among its masked bytes (which once made the watch
// take a request's end in the middle of the frame), and a header
// claiming 2^62 bytes or an unmasked frame closes with its status,
// counted.
func TestHeldWSFramesWithTheUpgrade(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "ws", envelope: "idlen"})
	addr := s.Addr("ws_idlen")
	body := []byte(`{"pad":"` + strings.Repeat("f", 990) + `"}`)
	// Masked with wsFrame's {1, 2, 3, 4}, this request_id's bytes are
	// "\r\n\r\n" on the wire.
	crlf := idlenMessage(rEcho, 0x0c080e0e, body)
	if !bytes.Contains(wsFrame(true, 2, crlf), []byte("\r\n\r\n")) {
		t.Fatal("the frame does not hold \\r\\n\\r\\n")
	}
	for _, tc := range []struct {
		name   string
		after  []byte
		answer []byte // the answer before any close
		status int    // the close status, 0 for none
		reason string
	}{
		{"a frame", wsFrame(true, 2, idlenMessage(rEcho, 7, body)), idlenMessage(rEcho, 7, body), 0, ""},
		{`a frame holding "\r\n\r\n"`, wsFrame(true, 2, crlf), crlf, 0, ""},
		{"a header claiming 2^62 bytes", append(binary.BigEndian.AppendUint64([]byte{0x82, 0xff}, 1<<62), 1, 2, 3, 4), nil, 1009, "too_large"},
		{"an unmasked frame", []byte{0x82, 0x01, 0x00}, nil, 1002, "bad_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n0 := s.ProtocolErrors(tc.reason)
			code, w := dialRawWS(t, addr, upgradeRequest("/ws", ""), tc.after)
			if code != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade: %d", code)
			}
			if tc.answer != nil {
				if got := w.expect(t, 2); !bytes.Equal(got, tc.answer) {
					t.Fatalf("answer %q", truncateBody(got))
				}
			}
			if tc.status == 0 {
				return
			}
			if got := w.expectClose(t); got != tc.status {
				t.Fatalf("closed with status %d, want %d", got, tc.status)
			}
			wiretest.Eventually(t, tc.reason+" counted", func() bool { return s.ProtocolErrors(tc.reason) == n0+1 })
		})
	}
	stillServes(t, s, "ws_idlen")
}

// TestHeldUpgradeRequests: on the upgrade path, request headers past the
// server's 16 KiB are refused (431) before any session exists, and paths
// that merely resemble the listener's are not upgraded (404). A request
// that smuggles bytes never gets them read as a client frame: one with a
// body (by Content-Length or chunked, or both at once) is refused (400),
// a second request after the upgrade is no frame of the session, and the
// connection ends within its handshake_timeout or idle_timeout. The
// gateway serves on.
func TestHeldUpgradeRequests(t *testing.T) {
	s := startTransportEdge(t, "  idle_timeout: 1s", tlistener{transport: "ws", envelope: "idlen", extra: "handshake_timeout: 300ms"})
	addr := s.Addr("ws_idlen")
	for _, tc := range []struct {
		name, request string
		status        int
	}{
		{"64 KiB of one header", upgradeRequest("/ws", "X-Pad: "+strings.Repeat("p", 64<<10)+"\r\n"), http.StatusRequestHeaderFieldsTooLarge},
		{"4,000 headers", upgradeRequest("/ws", strings.Repeat("X-A: b\r\n", 4000)), http.StatusRequestHeaderFieldsTooLarge},
		{"a path with a trailing slash", upgradeRequest("/ws/", ""), http.StatusNotFound},
		{"a path in other case", upgradeRequest("/WS", ""), http.StatusNotFound},
		{"a dot segment", upgradeRequest("/x/../ws", ""), http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _ := dialRawWS(t, addr, tc.request, nil); code != tc.status {
				t.Fatalf("status %d, want %d", code, tc.status)
			}
		})
	}
	frame := wsFrame(true, 2, idlenMessage(rEcho, 9, []byte(`{"smuggled":true}`)))
	for _, tc := range []struct {
		name, request string
		after         []byte
		status        string // the answer's status line begins so, if it is known
	}{
		{"a frame as the body", upgradeRequest("/ws", fmt.Sprintf("Content-Length: %d\r\n", len(frame))), frame, "HTTP/1.1 400"},
		{"a chunked body", upgradeRequest("/ws", "Transfer-Encoding: chunked\r\n"), []byte(fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(frame), frame)), "HTTP/1.1 400"},
		{"both lengths", upgradeRequest("/ws", fmt.Sprintf("Content-Length: %d\r\nTransfer-Encoding: chunked\r\n", len(frame))), frame, "HTTP/1.1 400"},
		{"a second request", upgradeRequest("/ws", ""), []byte("GET /ws HTTP/1.1\r\nHost: x\r\n\r\n"), "HTTP/1.1 101"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.DialTimeout("tcp", addr, patience)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(patience))
			nc.Write(append([]byte(tc.request+"\r\n"), tc.after...))
			got, err := io.ReadAll(nc)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("still open after %v: %q", patience, truncateBody(got))
			}
			if bytes.Contains(got, []byte("smuggled")) {
				t.Fatalf("the smuggled frame was answered: %q", got)
			}
			if !bytes.HasPrefix(got, []byte(tc.status)) {
				t.Fatalf("answered %q, want %q", truncateBody(got), tc.status)
			}
		})
	}
	stillServes(t, s, "ws_idlen")
}

// TestHeldHandshakeFlood: 300 connections to a TLS listener that never
// finish a handshake (silent, a ClientHello cut short, or plain text)
// hold at most max_sessions slots, each for at most handshake_timeout:
// the rest are refused at accept and counted, every one of them ends, and
// max_sessions well-behaved clients are served once the flood is over.
func TestHeldHandshakeFlood(t *testing.T) {
	const maxSessions = 64
	s := startTransportEdge(t, fmt.Sprintf("  max_sessions: %d", maxSessions),
		tlistener{transport: "tls", envelope: "idlen", extra: "handshake_timeout: 300ms"})
	addr := s.Addr("tls_idlen")
	refused0 := promtestutil.ToFloat64(s.Srv.Metrics.SessionsRefused)
	// A TLS record header announcing a 16 KiB handshake message, and
	// the first bytes of it.
	partial := []byte{0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x00, 0x3f, 0xfc, 0x03, 0x03}
	sends := [][]byte{nil, partial, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")}
	conns := dialMany(t, addr, 300)
	var wg sync.WaitGroup
	var open sync.Map
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetDeadline(time.Now().Add(patience))
			if b := sends[i%len(sends)]; b != nil {
				c.Write(b)
			}
			if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
				open.Store(i, true)
			}
		}()
	}
	wg.Wait()
	n := 0
	open.Range(func(any, any) bool { n++; return true })
	if n > 0 {
		t.Fatalf("%d of 300 connections still open after %v", n, patience)
	}
	refused := promtestutil.ToFloat64(s.Srv.Metrics.SessionsRefused) - refused0
	timedOut := s.LimitHits("handshake_timeout")
	t.Logf("300 handshakes never finished: %v refused at accept, %v closed at handshake_timeout", refused, timedOut)
	if refused < 300-3*maxSessions {
		t.Errorf("only %v refused at accept with max_sessions %d", refused, maxSessions)
	}
	if timedOut == 0 {
		t.Errorf("no handshake_timeout counted")
	}
	// Every slot is free again: max_sessions clients are all served (a
	// slot is given back a moment after its client sees the close).
	for i := range maxSessions {
		var c *client.Client
		wiretest.Eventually(t, fmt.Sprintf("client %d connected", i), func() bool {
			var err error
			c, err = s.dialWith(t, "tls_idlen", s.options(t, "tls_idlen"))
			return err == nil
		})
		var got json2
		call(t, c, rEcho, map[string]int{"i": i}, &got)
	}
}
