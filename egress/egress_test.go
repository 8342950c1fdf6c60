package egress_test

import (
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
)

// TestCheckRef runs SPEC §7's per-target checks. When a ref fails several,
// the first in the table's order wins: gateway_mismatch, session_not_found,
// epoch_expired, player_mismatch (queue_full is the caller's, last).
func TestCheckRef(t *testing.T) {
	cur := egress.ClientRef{SessionID: 7, Epoch: 3, PlayerID: "alice", Gateway: "gw-1"}
	with := func(edit func(*egress.ClientRef)) egress.ClientRef {
		r := cur
		edit(&r)
		return r
	}
	for _, tc := range []struct {
		name  string
		ref   egress.ClientRef
		found bool
		want  codes.Code
	}{
		{"accepted", cur, true, ""},
		{"gateway mismatch", with(func(r *egress.ClientRef) { r.Gateway = "gw-2" }), true, codes.GatewayMismatch},
		{"gateway before session", with(func(r *egress.ClientRef) { r.Gateway = "gw-2" }), false, codes.GatewayMismatch},
		{"gateway before everything", egress.ClientRef{SessionID: 7, Epoch: 1, PlayerID: "mallory", Gateway: ""}, false, codes.GatewayMismatch},
		{"session not found", cur, false, codes.SessionNotFound},
		{"session before epoch", with(func(r *egress.ClientRef) { r.Epoch = 2 }), false, codes.SessionNotFound},
		{"epoch expired", with(func(r *egress.ClientRef) { r.Epoch = 2 }), true, codes.EpochExpired},
		{"epoch from the future", with(func(r *egress.ClientRef) { r.Epoch = 4 }), true, codes.EpochExpired},
		{"epoch before player", with(func(r *egress.ClientRef) { r.Epoch, r.PlayerID = 2, "mallory" }), true, codes.EpochExpired},
		{"player mismatch", with(func(r *egress.ClientRef) { r.PlayerID = "mallory" }), true, codes.PlayerMismatch},
		{"player missing", with(func(r *egress.ClientRef) { r.PlayerID = "" }), true, codes.PlayerMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := egress.CheckRef(tc.ref, "gw-1", tc.found, cur); got != tc.want {
				t.Fatalf("CheckRef = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckRefBeforeBind: a session not bound yet has no player, and a ref
// to it must not name one.
func TestCheckRefBeforeBind(t *testing.T) {
	cur := egress.ClientRef{SessionID: 1, Epoch: 1, Gateway: "gw"}
	if got := egress.CheckRef(cur, "gw", true, cur); got != "" {
		t.Fatalf("unbound ref refused: %q", got)
	}
	forged := cur
	forged.PlayerID = "alice"
	if got := egress.CheckRef(forged, "gw", true, cur); got != codes.PlayerMismatch {
		t.Fatalf("forged player: %q", got)
	}
}

func TestRejectionReasons(t *testing.T) {
	for code, reason := range map[codes.Code]string{
		codes.DirectionRejected: "direction_rejected",
		codes.GatewayMismatch:   "gateway_mismatch",
		codes.SessionNotFound:   "session_not_found",
		codes.EpochExpired:      "epoch_expired",
		codes.PlayerMismatch:    "player_mismatch",
		codes.QueueFull:         "queue_full",
	} {
		if code.Reason() != reason {
			t.Errorf("%s.Reason() = %q, want %q", code, code.Reason(), reason)
		}
	}
}
