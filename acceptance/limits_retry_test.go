package acceptance

import (
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
)

// busyMessage is the max_inflight refusal's message.
const busyMessage = "too many requests in flight (session.max_inflight)"

// TestRetryHintsOff: by default a busy error's body is SPEC §3's
// {"code","message"} to the byte, with no retry_after_ms.
func TestRetryHintsOff(t *testing.T) {
	e := startEdge(t, "  max_inflight: 1")
	w := e.raw(t, "idlen")
	w.Send(
		envelope.Frame{Kind: envelope.Request, RouteID: rSleep, RequestID: 1, Body: []byte(`{"ms":300}`)},
		envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 2, Body: []byte(`2`)},
	)
	want := append([]byte{0, 0, 0, 0x60, 1, 0, 0, 0, 0, 0, 0, 2},
		`{"code":"client_rpc.busy","message":"`+busyMessage+`"}`...)
	want[3] = byte(len(want) - 4)
	w.ExpectBytes(want)
}

// TestRetryHintsOn: under session.retry_hints a busy error carries
// retry_after_ms 100 (ingress.BusyRetryAfter) and a rate_limited one the
// time until the bucket holds a token (1 to 200 ms at 5 a second).
func TestRetryHintsOn(t *testing.T) {
	e := startEdge(t, "  max_inflight: 1\n  retry_hints: true")
	w := e.raw(t, "idlen")
	w.Send(
		envelope.Frame{Kind: envelope.Request, RouteID: rSleep, RequestID: 1, Body: []byte(`{"ms":300}`)},
		envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 2, Body: []byte(`2`)},
	)
	if f := w.Expect(envelope.Frame{Kind: envelope.Error, RequestID: 2, Code: string(codes.Busy)}); f.RetryAfterMS != 100 || f.Message != busyMessage {
		t.Fatalf("busy: %+v, want retry_after_ms 100", f)
	}
	w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rSleep, RequestID: 1})

	r := startEdge(t, "  rate_limit: {per_second: 5, burst: 1}\n  retry_hints: true")
	rw := r.raw(t, "typelen")
	rw.Send(
		envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 1, Body: []byte(`1`)},
		envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 2, Body: []byte(`2`)},
	)
	// The refusal is at once; the first request's answer follows.
	if f := rw.Expect(envelope.Frame{Kind: envelope.Error, RouteID: rEcho, RequestID: 2, Code: string(codes.RateLimited)}); f.RetryAfterMS < 1 || f.RetryAfterMS > 200 {
		t.Fatalf("rate_limited: %+v, want retry_after_ms from 1 to 200", f)
	}
	rw.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rEcho, RequestID: 1, Body: []byte(`1`)})
}
