package gateway_test

import (
	"encoding/binary"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// Raw frame builders: they write what the SPEC's layouts say, byte by
// byte, whether or not it is valid.

func be32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// idlen: length, version, u24 route_id, u32 request_id, body.
func idlen(version byte, route, rid uint32, body string) []byte {
	b := be32(uint32(8 + len(body)))
	b = append(b, version, byte(route>>16), byte(route>>8), byte(route))
	b = binary.BigEndian.AppendUint32(b, rid)
	return append(b, body...)
}

// typelen: length, version, type, u16 route_id, u64 request_id, body.
func typelen(version, typ byte, route uint16, rid uint64, body string) []byte {
	b := be32(uint32(12 + len(body)))
	b = append(b, version, typ)
	b = binary.BigEndian.AppendUint16(b, route)
	b = binary.BigEndian.AppendUint64(b, rid)
	return append(b, body...)
}

// lenprefix: length, wrapper.
func lenprefix(wrapper string) []byte { return append(be32(uint32(len(wrapper))), wrapper...) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// TestHeartbeatEcho: on every envelope a heartbeat comes back byte for
// byte as SPEC §3 lays it out, once per heartbeat. (Heartbeats sent
// together are not all echoed: one whose echo finds an earlier one still
// waiting is dropped, SPEC §7; see TestHeartbeatLimits.)
func TestHeartbeatEcho(t *testing.T) {
	s := start(t, "")
	for _, tc := range []struct {
		listener string
		beat     []byte
		echo     []byte
	}{
		{"idlen", idlen(1, 0, 0, ""), []byte{0, 0, 0, 8, 1, 0, 0, 0, 0, 0, 0, 0}},
		// A typelen heartbeat's request_id is ignored; the echo has 0.
		{"typelen", typelen(1, 5, 0, 42, ""), []byte{0, 0, 0, 12, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"lenprefix", lenprefix(`{"type":"heartbeat"}`), lenprefix(`{"type":"heartbeat"}`)},
		{"delimiter", []byte("{\"type\":\"heartbeat\"}\n"), []byte("{\"type\":\"heartbeat\"}\n")},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			w := s.dial(t, tc.listener)
			for i := uint64(1); i <= 3; i++ {
				w.Write(tc.beat)
				w.ExpectBytes(tc.echo)
				// An answer after each echo: once it arrives, the echo's
				// batch is done, so the next heartbeat finds no earlier
				// echo waiting (TestHeartbeatRightAfterEcho).
				w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: i, Body: []byte(`{"a":1}`)})
				w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: routeEcho, RequestID: i, Body: []byte(`{"a":1}`)})
			}
			w.ExpectNothing(100 * time.Millisecond)
		})
	}
}

// TestHeartbeatRightAfterEcho (SPEC §7): a heartbeat echo finds room
// unless an earlier echo is still waiting; one the client has already
// received is not waiting, so a client that sends its next heartbeat as
// soon as the echo arrives gets every echo (ten a second are allowed).
func TestHeartbeatRightAfterEcho(t *testing.T) {
	s := start(t, "")
	for round := 0; round < 20; round++ {
		w := s.dial(t, "idlen")
		for i := 0; i < 10; i++ {
			w.Write(idlen(1, 0, 0, ""))
			w.ExpectBytes([]byte{0, 0, 0, 8, 1, 0, 0, 0, 0, 0, 0, 0})
		}
		w.NC.Close()
	}
	if n := s.Dropped("rate_limited"); n != 0 {
		t.Fatalf("%v heartbeats dropped", n)
	}
}

// TestHeartbeatTakesNoToken: with a bucket of one frame, five heartbeats
// and then a request all pass; the next request is over the limit.
func TestHeartbeatTakesNoToken(t *testing.T) {
	s := start(t, "  rate_limit: {per_second: 1, burst: 1}")
	w := s.dial(t, "idlen")
	for i := 0; i < 5; i++ {
		w.Send(envelope.Frame{Kind: envelope.Heartbeat})
		w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
	}
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 1, Body: []byte(`1`)})
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1, Body: []byte(`1`)})
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 2, Body: []byte(`2`)})
	w.Expect(envelope.Frame{Kind: envelope.Error, RequestID: 2, Code: string(codes.RateLimited)})
	// Heartbeats still pass while the bucket is empty.
	w.Send(envelope.Frame{Kind: envelope.Heartbeat})
	w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
}

// statusBody checks an error or notice body is exactly {"code","message"}.
func statusBody(t testing.TB, body []byte, code string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("status body %q: %v", body, err)
	}
	if len(m) != 2 || m["code"] != code || m["message"] == nil {
		t.Fatalf("status body %s, want exactly code %q and a message", body, code)
	}
}

// TestErrorFrames: the error frame of each envelope, as SPEC §3 lays it
// out: idlen on route 0 with the request's id, typelen with the request's
// route_id, the legacy wrappers with route, route_id and request_id.
func TestErrorFrames(t *testing.T) {
	s := start(t, "")
	t.Run("idlen", func(t *testing.T) {
		w := s.dial(t, "idlen")
		w.Write(idlen(1, routeFail, 0xDEADBEEF, `{}`))
		hdr := make([]byte, 12)
		if _, err := readFull(w, hdr); err != nil {
			t.Fatal(err)
		}
		n := binary.BigEndian.Uint32(hdr)
		if hdr[4] != 1 || hdr[5] != 0 || hdr[6] != 0 || hdr[7] != 0 || binary.BigEndian.Uint32(hdr[8:]) != 0xDEADBEEF {
			t.Fatalf("error header % x: want version 1, route 0, request id deadbeef", hdr)
		}
		body := make([]byte, n-8)
		if _, err := readFull(w, body); err != nil {
			t.Fatal(err)
		}
		statusBody(t, body, "wire.refused")
	})
	t.Run("typelen", func(t *testing.T) {
		w := s.dial(t, "typelen")
		const rid = 1<<40 + 7 // beyond 32 bits: typelen ids are u64
		w.Write(typelen(1, 1, routeFail, rid, `{}`))
		hdr := make([]byte, 16)
		if _, err := readFull(w, hdr); err != nil {
			t.Fatal(err)
		}
		if hdr[4] != 1 || hdr[5] != byte(envelope.Error) || binary.BigEndian.Uint16(hdr[6:]) != routeFail || binary.BigEndian.Uint64(hdr[8:]) != rid {
			t.Fatalf("error header % x: want version 1, type 3, route %d, request id %d", hdr, routeFail, uint64(rid))
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr)-12)
		if _, err := readFull(w, body); err != nil {
			t.Fatal(err)
		}
		statusBody(t, body, "wire.refused")
	})
	for _, env := range []string{"lenprefix", "delimiter"} {
		t.Run(env, func(t *testing.T) {
			w := s.dial(t, env)
			w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeFail, RequestID: 5, Body: []byte(`{}`)})
			var raw []byte
			w.NC.SetReadDeadline(time.Now().Add(wait))
			if env == "delimiter" {
				line, err := w.BR.ReadBytes('\n')
				if err != nil {
					t.Fatal(err)
				}
				raw = line
			} else {
				hdr := make([]byte, 4)
				if _, err := readFull(w, hdr); err != nil {
					t.Fatal(err)
				}
				raw = make([]byte, binary.BigEndian.Uint32(hdr))
				if _, err := readFull(w, raw); err != nil {
					t.Fatal(err)
				}
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%q: %v", raw, err)
			}
			if m["type"] != "error" || m["route"] != "fail" || m["route_id"] != float64(routeFail) ||
				m["request_id"] != float64(5) || m["code"] != "wire.refused" || m["message"] == nil {
				t.Fatalf("error wrapper %s", raw)
			}
		})
	}
}

func readFull(w *wire, b []byte) (int, error) {
	w.NC.SetReadDeadline(time.Now().Add(wait))
	n := 0
	for n < len(b) {
		m, err := w.BR.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// protocolCases are SPEC §3's protocol errors, each on the envelope where
// it can happen. halfClose ends our side after the bytes, for the cases
// that are about EOF.
var protocolCases = []struct {
	name      string
	listener  string
	bytes     []byte
	halfClose bool
	reason    envelope.Reason
}{
	{"idlen length 0xFFFFFFFF", "idlen", cat(be32(0xFFFFFFFF), []byte{1, 0, 0, 1}), false, envelope.ReasonTooLarge},
	{"idlen one byte over max_frame_bytes", "idlen", be32(maxFrame + 1), false, envelope.ReasonTooLarge},
	{"idlen length below header", "idlen", cat(be32(7), make([]byte, 7)), false, envelope.ReasonTooShort},
	{"idlen length 0", "idlen", be32(0), false, envelope.ReasonTooShort},
	{"idlen version 2", "idlen", idlen(2, routeEcho, 1, ""), false, envelope.ReasonBadVersion},
	{"idlen version 0", "idlen", idlen(0, routeEcho, 1, "{}"), false, envelope.ReasonBadVersion},
	{"idlen route 0 with request id", "idlen", idlen(1, 0, 5, ""), false, envelope.ReasonBadSystemFrame},
	{"idlen route 0 with body", "idlen", idlen(1, 0, 0, "x"), false, envelope.ReasonBadSystemFrame},
	{"idlen body cut by EOF", "idlen", idlen(1, routeEcho, 1, `{"x":1}`)[:14], true, envelope.ReasonTruncated},
	{"idlen header cut by EOF", "idlen", idlen(1, routeEcho, 1, "")[:7], true, envelope.ReasonTruncated},
	{"idlen length cut by EOF", "idlen", []byte{0, 0}, true, envelope.ReasonTruncated},
	{"typelen length 0xFFFFFFFF", "typelen", be32(0xFFFFFFFF), false, envelope.ReasonTooLarge},
	{"typelen length below header", "typelen", cat(be32(11), make([]byte, 11)), false, envelope.ReasonTooShort},
	{"typelen version 2", "typelen", typelen(2, 1, routeEcho, 1, ""), false, envelope.ReasonBadVersion},
	{"typelen response from a client", "typelen", typelen(1, 2, routeEcho, 1, ""), false, envelope.ReasonBadType},
	{"typelen error from a client", "typelen", typelen(1, 3, routeEcho, 1, `{"code":"a.b","message":""}`), false, envelope.ReasonBadType},
	{"typelen push from a client", "typelen", typelen(1, 4, routeEcho, 0, ""), false, envelope.ReasonBadType},
	{"typelen notice from a client", "typelen", typelen(1, 6, 0, 0, `{"code":"a.b","message":""}`), false, envelope.ReasonBadType},
	{"typelen type 0", "typelen", typelen(1, 0, routeEcho, 1, ""), false, envelope.ReasonBadType},
	{"typelen type 8", "typelen", typelen(1, 8, routeEcho, 1, ""), false, envelope.ReasonBadType},
	{"typelen type 9", "typelen", typelen(1, 9, routeEcho, 1, ""), false, envelope.ReasonBadType},
	{"typelen deadline that is not one", "typelen", typelen(1, 8, 0, 1, `{"deadline_ms":0}`), false, envelope.ReasonBadSystemFrame},
	{"typelen request id 0", "typelen", typelen(1, 1, routeEcho, 0, ""), false, envelope.ReasonBadSystemFrame},
	{"typelen request on route 0", "typelen", typelen(1, 1, 0, 1, ""), false, envelope.ReasonBadSystemFrame},
	{"typelen notify on route 0", "typelen", typelen(1, 7, 0, 0, ""), false, envelope.ReasonBadSystemFrame},
	{"typelen heartbeat with body", "typelen", typelen(1, 5, 0, 0, "x"), false, envelope.ReasonBadSystemFrame},
	{"typelen heartbeat off route 0", "typelen", typelen(1, 5, routeEcho, 0, ""), false, envelope.ReasonBadSystemFrame},
	{"typelen body cut by EOF", "typelen", typelen(1, 1, routeEcho, 1, `{"x":1}`)[:18], true, envelope.ReasonTruncated},
	{"lenprefix length 0", "lenprefix", be32(0), false, envelope.ReasonTooShort},
	{"lenprefix length 0xFFFFFFFF", "lenprefix", be32(0xFFFFFFFF), false, envelope.ReasonTooLarge},
	{"lenprefix not an object", "lenprefix", lenprefix(`[1,2]`), false, envelope.ReasonBadWrapper},
	{"lenprefix not JSON", "lenprefix", lenprefix(`hello`), false, envelope.ReasonBadWrapper},
	{"lenprefix route_id a string", "lenprefix", lenprefix(`{"type":"request","route_id":"1","request_id":1}`), false, envelope.ReasonBadWrapper},
	{"lenprefix request_id negative", "lenprefix", lenprefix(`{"type":"request","route_id":1,"request_id":-1}`), false, envelope.ReasonBadWrapper},
	{"lenprefix route_id fraction", "lenprefix", lenprefix(`{"route_id":1.5,"request_id":1}`), false, envelope.ReasonBadWrapper},
	{"lenprefix type a number", "lenprefix", lenprefix(`{"type":1,"route_id":1}`), false, envelope.ReasonBadWrapper},
	{"lenprefix unknown type", "lenprefix", lenprefix(`{"type":"hello","route_id":1}`), false, envelope.ReasonBadWrapper},
	{"lenprefix route a number", "lenprefix", lenprefix(`{"type":"notify","route":5}`), false, envelope.ReasonBadWrapper},
	{"lenprefix request without request_id", "lenprefix", lenprefix(`{"type":"request","route_id":1}`), false, envelope.ReasonBadWrapper},
	{"lenprefix notify without a route", "lenprefix", lenprefix(`{"type":"notify","payload":{}}`), false, envelope.ReasonBadWrapper},
	{"lenprefix response from a client", "lenprefix", lenprefix(`{"type":"response","route_id":1,"request_id":1}`), false, envelope.ReasonBadType},
	{"lenprefix wrapper cut by EOF", "lenprefix", cat(be32(100), []byte(`{"type":`)), true, envelope.ReasonTruncated},
	{"delimiter line over max_frame_bytes", "delimiter", []byte(strings.Repeat("x", maxFrame+1) + "\n"), false, envelope.ReasonTooLarge},
	{"delimiter endless line", "delimiter", []byte(strings.Repeat(" ", 8*maxFrame)), false, envelope.ReasonTooLarge},
	{"delimiter not JSON", "delimiter", []byte("hello\n"), false, envelope.ReasonBadWrapper},
	{"delimiter empty line", "delimiter", []byte("\n"), false, envelope.ReasonBadWrapper},
	{"delimiter request_id a string", "delimiter", []byte(`{"type":"request","route_id":1,"request_id":"5"}` + "\n"), false, envelope.ReasonBadWrapper},
	{"delimiter payload fine, route_id bool", "delimiter", []byte(`{"route_id":true,"request_id":1,"payload":{}}` + "\n"), false, envelope.ReasonBadWrapper},
	{"delimiter notice from a client", "delimiter", []byte(`{"type":"notice","code":"a.b","message":"m"}` + "\n"), false, envelope.ReasonBadType},
	{"delimiter line cut by EOF", "delimiter", []byte(`{"type":"heartbeat"}`), true, envelope.ReasonTruncated},
}

// TestProtocolErrors: each protocol error closes its connection without a
// frame, counts shield_protocol_errors_total{reason} and a protocol_error
// close, and leaves another session served throughout.
func TestProtocolErrors(t *testing.T) {
	s := start(t, "")
	good := s.dial(t, "idlen")
	var rid uint32
	for _, tc := range protocolCases {
		t.Run(tc.name, func(t *testing.T) {
			before, closedBefore := s.ProtocolErrors(string(tc.reason)), s.ClosedTotal("protocol_error")
			w := s.dial(t, tc.listener)
			w.Write(tc.bytes)
			if tc.halfClose {
				w.HalfClose()
			}
			w.ExpectClosed()
			wiretest.Eventually(t, "the protocol error counted", func() bool {
				return s.ProtocolErrors(string(tc.reason)) == before+1 && s.ClosedTotal("protocol_error") == closedBefore+1
			})
			rid++
			body := []byte(`{"n":` + strings.Repeat("1", int(rid%5)+1) + `}`)
			good.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: uint64(rid), Body: body})
			good.Expect(envelope.Frame{Kind: envelope.Response, RouteID: routeEcho, RequestID: uint64(rid), Body: body})
		})
	}
	for _, reason := range []string{"bad_version", "too_large", "too_short", "bad_system_frame", "bad_type", "bad_wrapper", "truncated"} {
		if s.ProtocolErrors(reason) == 0 {
			t.Errorf("no case counted %s", reason)
		}
	}
}

// TestHugeLengthAllocatesNothing: a claimed length of 4 GiB is refused
// before anything of that size is allocated, however often it is sent.
func TestHugeLengthAllocatesNothing(t *testing.T) {
	s := start(t, "  max_sessions: 1000")
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for _, listener := range []string{"idlen", "typelen", "lenprefix"} {
		for i := 0; i < 10; i++ {
			w := s.dial(t, listener)
			w.Write(cat(be32(0xFFFFFFF0), make([]byte, 16)))
			w.ExpectClosed()
		}
	}
	runtime.ReadMemStats(&m1)
	if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 64<<20 {
		t.Fatalf("30 claims of 4 GiB allocated %d MiB", grew>>20)
	}
}

// TestIdleTimeout: a client that sends nothing, and a slowloris that
// trickles a frame it never finishes, each get a session.idle_timeout
// notice and then the end, after idle_timeout and not before; the target
// hears idle_timeout.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := start(t, "  idle_timeout: 300ms")

	t.Run("silent", func(t *testing.T) {
		before := s.ClosedTotal("idle_timeout")
		started := time.Now()
		w := s.dial(t, "idlen")
		f := w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout)})
		if el := time.Since(started); el < idle {
			t.Fatalf("closed after %v, before idle_timeout", el)
		}
		if f.Message == "" {
			t.Error("notice without a message")
		}
		w.ExpectClosed()
		wiretest.Eventually(t, "idle_timeout counted", func() bool { return s.ClosedTotal("idle_timeout") == before+1 })
		s.Logs.WaitFor(t, "client_disconnected", "reason", "idle_timeout")
	})

	t.Run("slowloris", func(t *testing.T) {
		for _, listener := range []string{"idlen", "delimiter"} {
			t.Run(listener, func(t *testing.T) {
				// The clock starts before the dial: the gateway's may
				// start as it accepts, before the client's dial returns.
				started := time.Now()
				w := s.dial(t, listener)
				// A frame that would be valid, one byte every 50ms.
				frame := idlen(1, routeEcho, 1, strings.Repeat(" ", 100))
				if listener == "delimiter" {
					frame = []byte(`{"type":"request","route_id":1,"request_id":1,"payload":"` + strings.Repeat("x", 100) + `"}` + "\n")
				}
				stop, done := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(done)
					tick := time.NewTicker(50 * time.Millisecond)
					defer tick.Stop()
					for _, b := range frame[:len(frame)-1] {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						if _, err := w.NC.Write([]byte{b}); err != nil {
							return
						}
					}
				}()
				defer func() { close(stop); <-done }()
				w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout)})
				if el := time.Since(started); el < idle {
					t.Fatalf("closed after %v, before idle_timeout", el)
				}
				w.ExpectClosed()
			})
		}
	})

}

// TestHeartbeatsKeepSession: the idle deadline is per frame, so a client
// that sends only heartbeats, each well within idle_timeout, stays for
// several idle timeouts.
func TestHeartbeatsKeepSession(t *testing.T) {
	s := start(t, "  idle_timeout: 1s")
	w := s.dial(t, "typelen")
	started := time.Now()
	for time.Since(started) < 2500*time.Millisecond {
		w.Send(envelope.Frame{Kind: envelope.Heartbeat})
		w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
		w.ExpectNothing(100 * time.Millisecond)
	}
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 1, Body: []byte(`1`)})
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	if s.ClosedTotal("idle_timeout") != 0 {
		t.Fatal("a session closed for idleness")
	}
}

// TestMaxSessions: with max_sessions 3, a fourth connection is closed at
// accept and counted; when one leaves, a new one is served again.
func TestMaxSessions(t *testing.T) {
	s := start(t, "  max_sessions: 3")
	refused := func() float64 { return testutil.ToFloat64(s.Srv.Metrics.SessionsRefused) }
	var live []*wire
	for i := 0; i < 3; i++ {
		w := s.dial(t, "idlen")
		w.Send(envelope.Frame{Kind: envelope.Heartbeat})
		w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
		live = append(live, w)
	}
	before := refused()
	extra := s.dial(t, "idlen")
	extra.ExpectClosed()
	if got := refused(); got != before+1 {
		t.Fatalf("shield_sessions_refused_total %v -> %v", before, got)
	}
	// The three go on.
	for _, w := range live {
		w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 1, Body: []byte(`1`)})
		w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	}
	// One leaves; a newcomer is served once the gateway has seen it go.
	live[0].NC.Close()
	wiretest.Eventually(t, "a new session served", func() bool {
		w := s.dial(t, "idlen")
		defer w.NC.Close()
		if _, err := w.NC.Write(idlen(1, 0, 0, "")); err != nil {
			return false // refused: it was closed before we wrote
		}
		_, err := w.Next()
		return err == nil
	})
}

// TestDropWarnings: frames dropped at the edge are each counted, but
// logged at most once per session, reason and second, and never with
// their body.
func TestDropWarnings(t *testing.T) {
	s := start(t, "")
	const unknownRoute, n = 999, 50
	before := s.Dropped("route_not_found")
	for i := 0; i < 2; i++ {
		w := s.dial(t, "idlen")
		frames := make([]envelope.Frame, n)
		for j := range frames {
			frames[j] = envelope.Frame{Kind: envelope.Request, RouteID: unknownRoute, RequestID: uint64(j + 1), Body: []byte(`{"secret":"s3cr3t"}`)}
		}
		w.Send(frames...)
		w.ExpectNothing(100 * time.Millisecond) // a drop gets no answer
	}
	wiretest.Eventually(t, "every drop counted", func() bool {
		return s.Dropped("route_not_found") == before+2*n
	})
	lines := s.Logs.Count("frame dropped at the edge", "reason", "route_not_found", "route_id", "999")
	// One line per session, or two if its frames straddled a second.
	if lines < 2 || lines > 4 {
		t.Fatalf("%d warn lines for %d drops in two sessions\n%s", lines, 2*n, s.Logs.Dump())
	}
	if strings.Contains(s.Logs.Dump(), "s3cr3t") {
		t.Fatalf("a body reached the log:\n%s", s.Logs.Dump())
	}
}
