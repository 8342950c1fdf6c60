package gateway_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
)

func (s *server) dropped(reason string) float64 {
	return testutil.ToFloat64(s.srv.Metrics.EdgeDropped.WithLabelValues(reason))
}

// TestDroppedFramesTakeTokens: every frame but a heartbeat takes a token,
// dropped or not (SPEC §5). A request on an unknown route takes the
// bucket's one token and is dropped without an answer; the next request
// finds the bucket empty.
func TestDroppedFramesTakeTokens(t *testing.T) {
	s := start(t, "  rate_limit: {per_second: 1, burst: 1}")
	w := s.dial(t, "typelen")
	notFound, limited := s.dropped("route_not_found"), s.dropped("rate_limited")
	w.send(
		envelope.Frame{Kind: envelope.Request, RouteID: 999, RequestID: 1, Body: []byte(`1`)},
		envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 2, Body: []byte(`2`)},
	)
	w.expect(envelope.Frame{Kind: envelope.Error, RouteID: routeEcho, RequestID: 2, Code: string(codes.RateLimited)})
	w.expectNothing(100 * time.Millisecond)
	eventually(t, "the drops counted", func() bool {
		return s.dropped("route_not_found") == notFound+1 && s.dropped("rate_limited") == limited+1
	})
}

// TestEdgeWarnsOnlyWhereSPECSays: SPEC §5 warns for route_not_found,
// direction_rejected and not_authenticated ("drop, warn, count"); action
// drop and a notify over a limit are "drop, count": counted, not logged.
func TestEdgeWarnsOnlyWhereSPECSays(t *testing.T) {
	s := start(t, "  rate_limit: {per_second: 1, burst: 2}")
	w := s.dial(t, "idlen")
	notFound, dropped, limited := s.dropped("route_not_found"), s.dropped("dropped"), s.dropped("rate_limited")
	w.send(
		envelope.Frame{Kind: envelope.Notify, RouteID: 999, Body: []byte(`1`)},
		envelope.Frame{Kind: envelope.Notify, RouteID: routeSink, Body: []byte(`2`)},
		envelope.Frame{Kind: envelope.Notify, RouteID: routeEcho, Body: []byte(`3`)},
	)
	w.expectNothing(200 * time.Millisecond)
	eventually(t, "the drops counted", func() bool {
		return s.dropped("route_not_found") == notFound+1 && s.dropped("dropped") == dropped+1 &&
			s.dropped("rate_limited") == limited+1
	})
	s.logs.waitFor(t, "frame dropped at the edge", "reason", "route_not_found")
	for _, reason := range []string{"dropped", "rate_limited"} {
		if n := s.logs.count("frame dropped at the edge", "reason", reason); n != 0 {
			t.Errorf("%d warn lines for reason %s\n%s", n, reason, s.logs.dump())
		}
	}
}
