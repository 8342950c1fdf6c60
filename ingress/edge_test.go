package ingress_test

import (
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/ingress"
)

// route builds an edge route; the zero Action is replaced by decode_local.
func route(d config.Direction, auth bool, a config.Action) *descriptor.EdgeRoute {
	if a == 0 {
		a = config.DecodeLocal
	}
	return &descriptor.EdgeRoute{ID: 7, Name: "r", Direction: d, RequiresAuth: auth, Action: a, Owner: "svc"}
}

// TestCheck runs SPEC §5's descriptor checks. Where a frame fails several,
// the first in the table's order wins: route_not_found, direction_rejected,
// not_authenticated, dropped.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     *descriptor.EdgeRoute
		authd bool
		want  codes.Code
	}{
		{"unknown route", nil, true, codes.RouteNotFound},
		{"unknown route, unauthenticated", nil, false, codes.RouteNotFound},
		{"s2c", route(config.S2C, false, 0), true, codes.DirectionRejected},
		{"s2c before auth", route(config.S2C, true, 0), false, codes.DirectionRejected},
		{"s2c before drop", route(config.S2C, false, config.Drop), true, codes.DirectionRejected},
		{"needs auth", route(config.C2S, true, 0), false, codes.NotAuthenticated},
		{"auth before drop", route(config.C2S, true, config.Drop), false, codes.NotAuthenticated},
		{"bidi needs auth", route(config.Bidi, true, 0), false, codes.NotAuthenticated},
		{"drop", route(config.C2S, true, config.Drop), true, codes.Dropped},
		{"drop without auth", route(config.C2S, false, config.Drop), false, codes.Dropped},
		{"c2s authenticated", route(config.C2S, true, 0), true, ""},
		{"c2s open", route(config.C2S, false, 0), false, ""},
		{"bidi", route(config.Bidi, true, 0), true, ""},
		{"forward_raw", route(config.C2S, false, config.ForwardRaw), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ingress.Check(tc.r, tc.authd); got != tc.want {
				t.Fatalf("Check = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckReasons: every code Check returns has the metric reason SPEC §9
// names (the code without client_rpc.).
func TestCheckReasons(t *testing.T) {
	for code, reason := range map[codes.Code]string{
		codes.RouteNotFound:     "route_not_found",
		codes.DirectionRejected: "direction_rejected",
		codes.NotAuthenticated:  "not_authenticated",
		codes.Dropped:           "dropped",
		codes.RateLimited:       "rate_limited",
		codes.Busy:              "busy",
	} {
		if code.Reason() != reason {
			t.Errorf("%s.Reason() = %q, want %q", code, code.Reason(), reason)
		}
	}
}

func TestClientIngressNotify(t *testing.T) {
	in := &ingress.ClientIngress{}
	if !in.Notify() {
		t.Fatal("request_id 0 is a notify")
	}
	in.Client.RequestID = 3
	if in.Notify() {
		t.Fatal("request_id 3 is a request")
	}
}
