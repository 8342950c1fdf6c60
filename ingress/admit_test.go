package ingress_test

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/session"
)

// route builds an edge route; the zero Action is replaced by decode_local.
func route(d config.Direction, auth bool, a config.Action) *descriptor.EdgeRoute {
	if a == 0 {
		a = config.DecodeLocal
	}
	return &descriptor.EdgeRoute{ID: 7, Name: "r", Direction: d, RequiresAuth: auth, Action: a, Owner: "svc"}
}

// newSession is a real session with max_inflight slots.
func newSession(t testing.TB, slots int) *session.Session {
	t.Helper()
	fr, err := envelope.New("idlen", envelope.FromClient, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return session.New(1, "test", &session.Profile{Framer: fr, MaxFrameBytes: 1024, CodecKey: "json"},
		session.Binding{}, session.Limits{MaxInflight: slots, Outbound: 8, OutboundBytes: 1 << 10}, session.Hooks{})
}

var delivered = func() *codes.Error { return nil }

// TestAdmitDescriptorRows runs SPEC §5's descriptor rows. Where a frame
// fails several, the first in the table's order wins: route_not_found,
// direction_rejected, not_authenticated, dropped. Each is a silent drop
// (no error frame); the first three are logged, dropped is not.
func TestAdmitDescriptorRows(t *testing.T) {
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
			s := newSession(t, 4)
			v := ingress.Admit(ingress.Frame{Route: tc.r, Authenticated: tc.authd, Now: time.Now()}, s, delivered)
			if v.Code != tc.want {
				t.Fatalf("Admit = %q, want %q", v.Code, tc.want)
			}
			if v.Answer {
				t.Errorf("a descriptor row answered")
			}
			if warn := tc.want != "" && tc.want != codes.Dropped; v.Warn != warn {
				t.Errorf("warn = %v, want %v", v.Warn, warn)
			}
			if want := 0; tc.want == "" {
				want = 1
				if s.Inflight() != want {
					t.Errorf("%d slots taken, want %d", s.Inflight(), want)
				}
			} else if s.Inflight() != want {
				t.Errorf("%d slots taken by a refused frame", s.Inflight())
			}
		})
	}
}

// TestAdmitRateFirst: a frame that finds no token fails at the rate_limit
// row whatever the rows above it would say, and a request gets an error
// frame for it; a notify is only dropped.
func TestAdmitRateFirst(t *testing.T) {
	now := time.Now()
	b := ingress.NewBucket(1, 1)
	s := newSession(t, 4)
	if v := ingress.Admit(ingress.Frame{Route: nil, Bucket: b, Now: now}, s, delivered); v.Code != codes.RouteNotFound {
		t.Fatalf("first frame: %q (a dropped frame still takes its token)", v.Code)
	}
	v := ingress.Admit(ingress.Frame{Route: nil, Bucket: b, Now: now}, s, delivered)
	if v.Code != codes.RateLimited || !v.Answer || v.Limit != "rate_limit" {
		t.Fatalf("second frame: %+v, want rate_limited with an error frame", v)
	}
	v = ingress.Admit(ingress.Frame{Route: route(config.C2S, false, 0), Notify: true, Bucket: b, Now: now}, s, delivered)
	if v.Code != codes.RateLimited || v.Answer {
		t.Fatalf("notify over the limit: %+v, want a silent drop", v)
	}
}

// TestAdmitLimits: max_inflight comes after the descriptor rows, the
// target's lane last; a refused frame gives its slot back.
func TestAdmitLimits(t *testing.T) {
	r := route(config.C2S, false, 0)
	s := newSession(t, 1)
	if v := ingress.Admit(ingress.Frame{Route: r, Now: time.Now()}, s, delivered); v.Code != "" {
		t.Fatal(v.Code)
	}
	v := ingress.Admit(ingress.Frame{Route: r, Now: time.Now()}, s, delivered)
	if v.Code != codes.Busy || !v.Answer || v.Limit != "max_inflight" {
		t.Fatalf("over max_inflight: %+v", v)
	}
	if v := ingress.Admit(ingress.Frame{Route: nil, Now: time.Now()}, s, delivered); v.Code != codes.RouteNotFound {
		t.Fatalf("descriptor rows before max_inflight: %q", v.Code)
	}
	s.Release()
	full := func() *codes.Error { return codes.New(codes.Busy, "mailbox full") }
	v = ingress.Admit(ingress.Frame{Route: r, Now: time.Now()}, s, full)
	if v.Code != codes.Busy || v.Limit != "mailbox" || s.Inflight() != 0 {
		t.Fatalf("full lane: %+v with %d slots taken", v, s.Inflight())
	}
	gone := func() *codes.Error { return codes.New(codes.Unavailable, "no VM") }
	if v := ingress.Admit(ingress.Frame{Route: r, Now: time.Now()}, s, gone); v.Code != codes.Unavailable || s.Inflight() != 0 {
		t.Fatalf("no VM: %+v", v)
	}
}

// TestHold: a frame the gate holds takes its token and its slot when it
// arrives (past max_inflight: busy at once), and the rest of the table
// when it is let go, without a second token.
func TestHold(t *testing.T) {
	now := time.Now()
	b := ingress.NewBucket(1, 1)
	s := newSession(t, 1)
	r := route(config.C2S, true, 0)
	if v := ingress.Hold(ingress.Frame{Route: r, Bucket: b, Now: now}, s); v.Code != "" || s.Inflight() != 1 {
		t.Fatalf("hold: %+v, %d slots", v, s.Inflight())
	}
	if v := ingress.Hold(ingress.Frame{Route: r, Bucket: ingress.NewBucket(5, 5), Now: now}, s); v.Code != codes.Busy {
		t.Fatalf("hold past max_inflight: %+v", v)
	}
	// Let go after the login bound the session: judged as authenticated.
	if v := ingress.Admit(ingress.Frame{Route: r, Authenticated: true, Now: now, Holding: true}, s, delivered); v.Code != "" || s.Inflight() != 1 {
		t.Fatalf("let go: %+v, %d slots", v, s.Inflight())
	}
	s.Release()
	// Let go while still unauthenticated: refused, and the slot is back.
	ingress.Hold(ingress.Frame{Route: r, Now: now}, s)
	if v := ingress.Admit(ingress.Frame{Route: r, Now: now, Holding: true}, s, delivered); v.Code != codes.NotAuthenticated || s.Inflight() != 0 {
		t.Fatalf("let go unauthenticated: %+v, %d slots", v, s.Inflight())
	}
}

// TestCheckReasons: every code the edge returns has the metric reason
// SPEC §9 names (the code without client_rpc.).
func TestCheckReasons(t *testing.T) {
	for code, reason := range map[codes.Code]string{
		codes.RouteNotFound:     "route_not_found",
		codes.DirectionRejected: "direction_rejected",
		codes.NotAuthenticated:  "not_authenticated",
		codes.Dropped:           "dropped",
		codes.RateLimited:       "rate_limited",
		codes.Busy:              "busy",
		codes.Unavailable:       "unavailable",
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
