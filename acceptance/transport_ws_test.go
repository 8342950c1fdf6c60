package acceptance

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// idlenMessage is an idlen frame as a WebSocket message carries it: the
// 8-byte header and the body, without the u32 length.
func idlenMessage(route, rid uint32, body []byte) []byte {
	msg := []byte{envelope.Version, byte(route >> 16), byte(route >> 8), byte(route)}
	msg = binary.BigEndian.AppendUint32(msg, rid)
	return append(msg, body...)
}

// jsonString is a JSON string body of exactly n bytes.
func jsonString(n int) []byte {
	return append(append([]byte{'"'}, bytes.Repeat([]byte{'x'}, n-2)...), '"')
}

// TestWSMessageLimit: a message of exactly max_frame_bytes is a frame like
// any other; one byte more closes that session with status 1009 and counts
// too_large, and another session on the same listener goes on. (The
// frames come before any login, so the lower cap for those is off here:
// TestAuthFrameCap has it.)
func TestWSMessageLimit(t *testing.T) {
	s := startTransportEdge(t, "  auth_max_frame_bytes: 0", tlistener{transport: "ws", envelope: "idlen"}, tlistener{transport: "wss", envelope: "idlen"})
	for _, name := range []string{"ws_idlen", "wss_idlen"} {
		t.Run(name, func(t *testing.T) {
			bystander := s.dial(t, name)
			w := s.wsWire(t, name, nil)
			const max = 65536 // the default max_frame_bytes
			full := idlenMessage(rEcho, 1, jsonString(max-envelope.IdlenHeaderSize))
			if len(full) != max {
				t.Fatalf("message of %d bytes", len(full))
			}
			if err := w.writeMessage(websocket.MessageBinary, full); err != nil {
				t.Fatal(err)
			}
			f := w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rEcho, RequestID: 1})
			if len(f.Body) != max-envelope.IdlenHeaderSize {
				t.Fatalf("echo of %d bytes", len(f.Body))
			}

			n0 := s.ProtocolErrors("too_large")
			over := idlenMessage(rEcho, 2, jsonString(max-envelope.IdlenHeaderSize+1))
			_ = w.writeMessage(websocket.MessageBinary, over) // the gateway may close before it is all sent
			w.ExpectClosed()
			w.expectStatus(websocket.StatusMessageTooBig)
			wiretest.Eventually(t, "too_large counted", func() bool { return s.ProtocolErrors("too_large") == n0+1 })

			var got json2
			call(t, bystander, rEcho, map[string]int{"still": 1}, &got)
		})
	}
}

type json2 map[string]any

// TestWSHugeMessageBuffersNothing: a message of many times the limit is
// refused after the limit (SPEC §3, Transports: "without more than
// max_frame_bytes of it being buffered"). The gateway runs in this process,
// so what it buffers is what the process allocates while the message
// streams in: a gateway that read the 64 MiB message into memory would
// allocate at least that much, one that stops at the limit a few hundred
// KiB. Whether the client's write completes is not the point: the close
// handshake may read the rest of the message and discard it (the write
// succeeds), or give up after its second and close the socket (it fails).
func TestWSHugeMessageBuffersNothing(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "ws", envelope: "idlen"})
	w := s.wsWire(t, "ws_idlen", nil)
	const size = 64 << 20
	huge := idlenMessage(rEcho, 1, make([]byte, size))
	n0 := s.ProtocolErrors("too_large")

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	werr := make(chan error, 1)
	go func() { werr <- w.writeMessage(websocket.MessageBinary, huge) }()
	w.ExpectClosed()
	w.expectStatus(websocket.StatusMessageTooBig)
	select {
	case <-werr:
	case <-time.After(patience):
		t.Fatal("the write of the huge message did not end")
	}
	runtime.ReadMemStats(&after)

	wiretest.Eventually(t, "too_large counted", func() bool { return s.ProtocolErrors("too_large") == n0+1 })
	// A bound far below the message and far above the limit: the read
	// buffer (max_frame_bytes), the library's buffers and whatever the
	// idle server and this test allocate meanwhile.
	const bound = 8 << 20
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB while the message streamed in", grew>>10)
	if grew > bound {
		t.Fatalf("the process allocated %d KiB while a %d MiB message streamed in, want at most %d KiB", grew>>10, size>>20, bound>>10)
	}
}

// TestWSMessageType: a text message on a binary envelope, or a binary
// message on delimiter, closes the session as bad_type with status 1003.
func TestWSMessageType(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "ws", envelope: "idlen"}, tlistener{transport: "ws", envelope: "delimiter"})
	for _, tc := range []struct {
		listener string
		typ      websocket.MessageType
		msg      []byte
	}{
		{"ws_idlen", websocket.MessageText, idlenMessage(rEcho, 1, []byte(`{}`))},
		{"ws_delimiter", websocket.MessageBinary, []byte(`{"type":"request","route_id":102,"request_id":1,"payload":{}}`)},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			w := s.wsWire(t, tc.listener, nil)
			n0 := s.ProtocolErrors("bad_type")
			if err := w.writeMessage(tc.typ, tc.msg); err != nil {
				t.Fatal(err)
			}
			w.ExpectClosed()
			w.expectStatus(websocket.StatusUnsupportedData)
			wiretest.Eventually(t, "bad_type counted", func() bool { return s.ProtocolErrors("bad_type") == n0+1 })
		})
	}
}

// TestWSEnvelopeErrors: a message that breaks the envelope is a protocol
// error like on a stream (status 1008), and the message boundary replaces
// the stream's length: a frame shorter than its header is too_short.
func TestWSEnvelopeErrors(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "ws", envelope: "idlen"}, tlistener{transport: "ws", envelope: "delimiter"})
	for _, tc := range []struct {
		listener, reason string
		msg              []byte
	}{
		{"ws_idlen", "too_short", []byte{1, 0, 0}},
		{"ws_idlen", "bad_version", append([]byte{2}, idlenMessage(rEcho, 1, nil)[1:]...)},
		{"ws_delimiter", "bad_wrapper", []byte(`[1,2]`)},
		// A newline is JSON whitespace, not a frame boundary: one message,
		// one wrapper, whatever it contains.
		{"ws_delimiter", "bad_wrapper", []byte("{\"type\":\"heartbeat\"}\n{\"type\":\"heartbeat\"}")},
	} {
		t.Run(tc.listener+"/"+tc.reason, func(t *testing.T) {
			w := s.wsWire(t, tc.listener, nil)
			n0 := s.ProtocolErrors(tc.reason)
			typ := websocket.MessageBinary
			if tc.listener == "ws_delimiter" {
				typ = websocket.MessageText
			}
			if err := w.writeMessage(typ, tc.msg); err != nil {
				t.Fatal(err)
			}
			w.ExpectClosed()
			w.expectStatus(websocket.StatusPolicyViolation)
			wiretest.Eventually(t, tc.reason+" counted", func() bool { return s.ProtocolErrors(tc.reason) == n0+1 })
		})
	}
}

// TestWSPathAndOrigin: only the listener's path upgrades (404 elsewhere);
// with allowed_origins, an Origin not exactly on the list is refused with
// 403, a listed one or none at all (a native client) is accepted; without
// allowed_origins any Origin is.
func TestWSPathAndOrigin(t *testing.T) {
	s := startTransportEdge(t, "",
		tlistener{transport: "ws", envelope: "idlen", extra: `allowed_origins: ["http://game.example", "https://game.example:8443"]`},
		tlistener{transport: "ws", envelope: "delimiter"})

	resp, err := http.Get("http://" + s.Addr("ws_idlen") + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /other: %d, want 404", resp.StatusCode)
	}
	o := s.options(t, "ws_idlen")
	o.Path = "/other"
	if _, err := s.dialWith(t, "ws_idlen", o); !upgradeStatus(err, http.StatusNotFound) {
		t.Fatalf("upgrade at /other: %v, want HTTP 404", err)
	}

	for _, tc := range []struct {
		listener, origin string
		status           int // 0: accepted
	}{
		{"ws_idlen", "", 0},
		{"ws_idlen", "http://game.example", 0},
		{"ws_idlen", "https://game.example:8443", 0},
		{"ws_idlen", "http://evil.example", http.StatusForbidden},
		{"ws_idlen", "http://GAME.example", http.StatusForbidden}, // exact strings, not hosts
		{"ws_idlen", "http://game.example:80", http.StatusForbidden},
		{"ws_idlen", "null", http.StatusForbidden},
		{"ws_delimiter", "http://evil.example", 0},
	} {
		o := s.options(t, tc.listener)
		o.Origin = tc.origin
		c, err := s.dialWith(t, tc.listener, o)
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("%s origin %q: %v", tc.listener, tc.origin, err)
		case tc.status == 0:
			var got json2
			call(t, c, rEcho, map[string]int{"n": 1}, &got)
		case !upgradeStatus(err, tc.status):
			t.Errorf("%s origin %q: %v, want HTTP %d", tc.listener, tc.origin, err, tc.status)
		}
	}
	if n := s.Srv.Gateway.Sessions().Len(); n != 4 {
		t.Errorf("%d sessions, want the 4 accepted", n)
	}
}

func upgradeStatus(err error, status int) bool {
	var ue *client.UpgradeError
	return errors.As(err, &ue) && ue.Status == status
}

// TestWSSessionEnds: over ws, an idle session gets its notice then a
// normal close; a client's close frame ends its session as closed; a
// drain sends the gateway.drain_started status at once, and when the
// grace ends gateway.draining then status 1001 (going away).
func TestWSSessionEnds(t *testing.T) {
	s := startTransportEdge(t, "  idle_timeout: 300ms\n  shutdown_grace: 100ms",
		tlistener{transport: "ws", envelope: "typelen"}, tlistener{transport: "wss", envelope: "delimiter"})
	for _, name := range []string{"ws_typelen", "wss_delimiter"} {
		w := s.wsWire(t, name, nil)
		w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout)})
		w.ExpectClosed()
		w.expectStatus(websocket.StatusNormalClosure)
	}

	closed := s.ClosedTotal("closed")
	c := s.dial(t, "ws_typelen")
	c.Close()
	wiretest.Eventually(t, "the session closed as closed", func() bool { return s.ClosedTotal("closed") == closed+1 })

	// Drain: the session is live until the grace ends, then told.
	w := s.wsWire(t, "wss_delimiter", nil)
	w.Send(envelope.Frame{Kind: envelope.Heartbeat})
	w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop() }()
	w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDrainStarted)})
	w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDraining)})
	w.ExpectClosed()
	w.expectStatus(websocket.StatusGoingAway)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestWSNotAnUpgrade: a plain GET at the path is told to upgrade (426),
// and the connection is not kept for another try.
func TestWSNotAnUpgrade(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "ws", envelope: "idlen"})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr("ws_idlen")+"/ws", nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || !resp.Close {
		t.Fatalf("GET /ws: %d close=%v %q", resp.StatusCode, resp.Close, strings.TrimSpace(string(body)))
	}
}
