package gateway_test

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestDroppedFramesTakeTokens: every frame but a heartbeat takes a token,
// dropped or not (SPEC §5). A request on an unknown route takes the
// bucket's one token and is dropped without an answer; the next request
// finds the bucket empty.
func TestDroppedFramesTakeTokens(t *testing.T) {
	s := start(t, "  rate_limit: {per_second: 1, burst: 1}")
	w := s.dial(t, "typelen")
	notFound, limited := s.Dropped("route_not_found"), s.Dropped("rate_limited")
	w.Send(
		envelope.Frame{Kind: envelope.Request, RouteID: 999, RequestID: 1, Body: []byte(`1`)},
		envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 2, Body: []byte(`2`)},
	)
	w.Expect(envelope.Frame{Kind: envelope.Error, RouteID: routeEcho, RequestID: 2, Code: string(codes.RateLimited)})
	w.ExpectNothing(100 * time.Millisecond)
	wiretest.Eventually(t, "the drops counted", func() bool {
		return s.Dropped("route_not_found") == notFound+1 && s.Dropped("rate_limited") == limited+1
	})
}

// TestEdgeWarnsOnlyWhereSPECSays: SPEC §5 warns for route_not_found,
// direction_rejected and not_authenticated ("drop, warn, count"); action
// drop and a notify over a limit are "drop, count": counted, not logged.
func TestEdgeWarnsOnlyWhereSPECSays(t *testing.T) {
	s := start(t, "  rate_limit: {per_second: 1, burst: 2}")
	w := s.dial(t, "idlen")
	notFound, dropped, limited := s.Dropped("route_not_found"), s.Dropped("dropped"), s.Dropped("rate_limited")
	w.Send(
		envelope.Frame{Kind: envelope.Notify, RouteID: 999, Body: []byte(`1`)},
		envelope.Frame{Kind: envelope.Notify, RouteID: routeSink, Body: []byte(`2`)},
		envelope.Frame{Kind: envelope.Notify, RouteID: routeEcho, Body: []byte(`3`)},
	)
	w.ExpectNothing(200 * time.Millisecond)
	wiretest.Eventually(t, "the drops counted", func() bool {
		return s.Dropped("route_not_found") == notFound+1 && s.Dropped("dropped") == dropped+1 &&
			s.Dropped("rate_limited") == limited+1
	})
	s.Logs.WaitFor(t, "frame dropped at the edge", "reason", "route_not_found")
	for _, reason := range []string{"dropped", "rate_limited"} {
		if n := s.Logs.Count("frame dropped at the edge", "reason", reason); n != 0 {
			t.Errorf("%d warn lines for reason %s\n%s", n, reason, s.Logs.Dump())
		}
	}
}
