package egress_test

import (
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// newSession is a real session bound to player at epoch 1 (3 after two
// rebinds is not needed: the table's rows compare whatever epoch it is),
// on an idlen listener with max_frame_bytes 64 and room for one push.
func newSession(t testing.TB, player string) *session.Session {
	t.Helper()
	fr, err := envelope.New("idlen", envelope.FromClient, 64)
	if err != nil {
		t.Fatal(err)
	}
	p := &session.Profile{Listener: "game", Framer: fr, MaxFrameBytes: 64, CodecKey: "json"}
	s := session.New(7, "127.0.0.1:1", p, session.Binding{Gateway: "gw-1"},
		session.Limits{MaxInflight: 1, Outbound: 1, OutboundBytes: 1 << 10}, session.Hooks{})
	if player != "" {
		// A registry bind is the only way to set a player.
		reg := session.NewRegistry()
		reg.Add(s)
		ref := s.Ref()
		if _, err := reg.Bind(&egress.BindRequest{Ref: ref, PlayerID: player, Caller: s.Binding().Target}, session.Policy{}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func push(n int) *envelope.Frame {
	return &envelope.Frame{Kind: envelope.Push, RouteID: 1, Body: make([]byte, n)}
}

// TestCheck runs SPEC §7's per-target rows. When a target fails several,
// the first in the table's order wins: gateway_mismatch,
// session_not_found, epoch_expired, player_mismatch, resource_exhausted
// (the frame does not fit the listener), queue_full.
func TestCheck(t *testing.T) {
	s := newSession(t, "alice")
	cur := s.Ref() // epoch 2, player alice, gateway gw-1
	with := func(edit func(*egress.ClientRef)) egress.ClientRef {
		r := cur
		edit(&r)
		return r
	}
	for _, tc := range []struct {
		name  string
		ref   egress.ClientRef
		found bool
		frame *envelope.Frame
		want  codes.Code
	}{
		{"accepted", cur, true, push(8), ""},
		{"gateway mismatch", with(func(r *egress.ClientRef) { r.Gateway = "gw-2" }), true, push(8), codes.GatewayMismatch},
		{"gateway before session", with(func(r *egress.ClientRef) { r.Gateway = "gw-2" }), false, push(8), codes.GatewayMismatch},
		{"gateway before everything", egress.ClientRef{SessionID: 7, Epoch: 1, PlayerID: "mallory", Gateway: ""}, false, push(100), codes.GatewayMismatch},
		{"session not found", cur, false, push(8), codes.SessionNotFound},
		{"session before epoch", with(func(r *egress.ClientRef) { r.Epoch = 1 }), false, push(8), codes.SessionNotFound},
		{"epoch expired", with(func(r *egress.ClientRef) { r.Epoch = 1 }), true, push(8), codes.EpochExpired},
		{"epoch from the future", with(func(r *egress.ClientRef) { r.Epoch = 4 }), true, push(8), codes.EpochExpired},
		{"epoch before player", with(func(r *egress.ClientRef) { r.Epoch, r.PlayerID = 1, "mallory" }), true, push(8), codes.EpochExpired},
		{"player mismatch", with(func(r *egress.ClientRef) { r.PlayerID = "mallory" }), true, push(8), codes.PlayerMismatch},
		{"player missing", with(func(r *egress.ClientRef) { r.PlayerID = "" }), true, push(8), codes.PlayerMismatch},
		{"player before size", with(func(r *egress.ClientRef) { r.PlayerID = "" }), true, push(100), codes.PlayerMismatch},
		{"frame too long", cur, true, push(64 - 8 + 1), codes.ResourceExhausted},
		{"frame just fits", cur, true, push(64 - 8), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, "alice")
			var target egress.Session
			if tc.found {
				target = s
			}
			if got := egress.Check(tc.ref, "gw-1", target, tc.frame); got != tc.want {
				t.Fatalf("Check = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckQueue: the last row is the session's outbound queue, which
// queues an accepted push; a closed session no longer exists.
func TestCheckQueue(t *testing.T) {
	s := newSession(t, "alice")
	ref := s.Ref()
	if got := egress.Check(ref, "gw-1", s, push(8)); got != "" {
		t.Fatalf("first push: %q", got)
	}
	if got := egress.Check(ref, "gw-1", s, push(8)); got != codes.QueueFull {
		t.Fatalf("second push with outbound_queue 1: %q, want queue_full", got)
	}
	s.Close(session.Kicked, nil)
	if got := egress.Check(ref, "gw-1", s, push(8)); got != codes.SessionNotFound {
		t.Fatalf("push to a closed session: %q", got)
	}
}

// TestCheckBeforeBind: a session not bound yet has no player, and a ref
// to it must not name one.
func TestCheckBeforeBind(t *testing.T) {
	s := newSession(t, "")
	cur := s.Ref()
	if got := egress.CheckRef(cur, "gw-1", s); got != "" {
		t.Fatalf("unbound ref refused: %q", got)
	}
	forged := cur
	forged.PlayerID = "alice"
	if got := egress.CheckRef(forged, "gw-1", s); got != codes.PlayerMismatch {
		t.Fatalf("forged player: %q", got)
	}
}

// TestCheckRoute: only s2c and bidi routes carry pushes.
func TestCheckRoute(t *testing.T) {
	for _, tc := range []struct {
		r    *descriptor.EdgeRoute
		want codes.Code
	}{
		{nil, codes.DirectionRejected},
		{&descriptor.EdgeRoute{Direction: config.C2S}, codes.DirectionRejected},
		{&descriptor.EdgeRoute{Direction: config.S2C}, ""},
		{&descriptor.EdgeRoute{Direction: config.Bidi}, ""},
	} {
		if got := egress.CheckRoute(tc.r); got != tc.want {
			t.Errorf("CheckRoute(%+v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestRejectionReasons(t *testing.T) {
	for code, reason := range map[codes.Code]string{
		codes.DirectionRejected: "direction_rejected",
		codes.GatewayMismatch:   "gateway_mismatch",
		codes.SessionNotFound:   "session_not_found",
		codes.EpochExpired:      "epoch_expired",
		codes.PlayerMismatch:    "player_mismatch",
		codes.ResourceExhausted: "resource_exhausted",
		codes.QueueFull:         "queue_full",
	} {
		if code.Reason() != reason {
			t.Errorf("%s.Reason() = %q, want %q", code, code.Reason(), reason)
		}
	}
}
