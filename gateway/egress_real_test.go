package gateway_test

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestPushDirectionRejected (SPEC §7, first row): the real gateway refuses
// a push on a route that is not s2c or bidi (a c2s route, or no route at
// all) with direction_rejected for every target, before any ref row (a
// target that names no session is refused for the direction too), counts
// each, and writes nothing.
func TestPushDirectionRejected(t *testing.T) {
	s := start(t, "")
	w := s.dial(t, "idlen")
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 1, Body: []byte(`1`)})
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	all := s.Srv.Gateway.Sessions().All()
	if len(all) != 1 {
		t.Fatalf("%d sessions", len(all))
	}
	live := all[0].Binding().Ref(all[0].ID)
	nobody := live
	nobody.SessionID ^= 1
	before := s.EgressRejected("direction_rejected")
	for _, route := range []uint32{routeEcho, 999} {
		got := s.Srv.Gateway.Push(&egress.Push{RouteID: route, Bodies: map[string][]byte{"json": []byte(`"x"`)},
			Targets: []egress.ClientRef{live, nobody}})
		if len(got) != 2 || got[0] != codes.DirectionRejected || got[1] != codes.DirectionRejected {
			t.Fatalf("push on route %d: %v, want direction_rejected twice", route, got)
		}
	}
	if n := s.EgressRejected("direction_rejected") - before; n != 4 {
		t.Fatalf("egress_rejected{direction_rejected} grew by %v, want 4", n)
	}
	// Nothing was written: the next frame is the next answer.
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 2, Body: []byte(`2`)})
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2, Body: []byte(`2`)})
}

// TestRefusalsThatCannotBeQueued (SPEC §5, §7): a client that sends
// requests without reading, each refused at the edge (rate_limited), is
// owed an error frame for each; once the gateway's writer is blocked and
// max_inflight + outbound_queue of them wait, the next cannot be queued
// and the session is closed as a slow consumer at once (not after
// write_timeout, which is long here), counted as the outbound_queue limit.
func TestRefusalsThatCannotBeQueued(t *testing.T) {
	s := start(t, "  idle_timeout: 60s\n  write_timeout: 30s\n  max_inflight: 1\n  outbound_queue: 1\n  rate_limit: {per_second: 1, burst: 1}")
	w := s.dial(t, "idlen")
	if err := w.NC.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	hitsBefore := s.LimitHits("outbound_queue")
	var batch []byte
	for i := 0; i < 10000; i++ {
		batch = append(batch, idlen(1, routeEcho, uint32(i+1), `1`)...)
	}
	closed := func() bool { return s.ClosedTotal("slow_consumer") == 1 }
	// The close comes only while the client keeps writing (each refusal
	// must find the queue full), and how soon depends on how fast the
	// gateway reads: under a loaded CI machine, keep writing for longer
	// rather than stop after a fixed few seconds.
	deadline := time.Now().Add(6 * wait)
	for sent := 0; !closed() && sent < 2000 && time.Now().Before(deadline); sent++ {
		w.NC.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := w.NC.Write(batch); err != nil {
			break // the gateway closed the connection meanwhile
		}
	}
	wiretest.Eventually(t, "closed as a slow consumer", closed)
	if n := s.LimitHits("outbound_queue") - hitsBefore; n != 1 {
		t.Fatalf("limits_hit{outbound_queue} grew by %v, want 1", n)
	}
	if n := s.LimitHits("slow_consumer"); n != 0 {
		t.Fatalf("the write timeout fired (%v): the refusal path was not the one that closed", n)
	}
}
