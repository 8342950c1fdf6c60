package acceptance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestBodyNeverRoutes: route ids, route names and player ids inside a body
// are business fields: the header routes, and the session's binding is the
// identity.
func TestBodyNeverRoutes(t *testing.T) {
	g := startGame(t, "")
	c := g.dial(t, "idlen")
	var got struct {
		PlayerID string `json:"player_id"`
	}
	// A login whose body claims another route and another player.
	call(t, c, routeLogin, map[string]any{"user": "grace", "route_id": routeMove, "player_id": "admin", "target": "probe"}, &got)
	if got.PlayerID != "grace" {
		t.Fatalf("player_id %q", got.PlayerID)
	}
	// The client named "probe" as a target in the body; the session is
	// bound where the Lua code said (player), so a probe route finds no
	// binding there.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Call(ctx, routeEcho, map[string]any{"x": 1}, nil)
	var ce *codes.Error
	if !errors.As(err, &ce) || ce.Code != codes.HandlerMissing {
		t.Fatalf("probe route after login: %v, want %s", err, codes.HandlerMissing)
	}
	// A move whose body names another player is still this player's move.
	var seen pushes
	c.OnPush(routePosition, seen.add)
	call(t, c, routeJoinRoom, map[string]string{"room": "sec"}, nil)
	call(t, c, routeMove, map[string]any{"x": 5, "y": 6, "player_id": "admin"}, nil)
	wiretest.Eventually(t, "the push names grace", func() bool { return seen.has(`{"player_id":"grace","x":5,"y":6}`) })
}

// TestForgedRefsRejected: a ClientRef built by hand in Lua reaches nobody
// unless it is a live session's current ref.
func TestForgedRefsRejected(t *testing.T) {
	g := startGame(t, "")
	victim, attacker := g.dial(t, "probe"), g.dial(t, "probe")
	call(t, victim, routeStale, map[string]string{"user": "victim"}, nil) // binds twice: epoch 3
	var who struct {
		SessionID uint64 `json:"session_id"`
		Epoch     uint64 `json:"epoch"`
		PlayerID  string `json:"player_id"`
	}
	call(t, victim, routeWhoami, nil, &who)
	if who.PlayerID != "victim" || who.Epoch != 3 {
		t.Fatalf("whoami %+v", who)
	}
	var pushed pushes
	victim.OnPush(routeProbePush, pushed.add)
	for _, tc := range []struct {
		name string
		ref  map[string]any
		want codes.Code
	}{
		{"another player's name", map[string]any{"session_id": who.SessionID, "epoch": who.Epoch, "player_id": "mallory", "gateway": "gw-test"}, codes.PlayerMismatch},
		{"an old epoch", map[string]any{"session_id": who.SessionID, "epoch": 2, "player_id": "victim", "gateway": "gw-test"}, codes.EpochExpired},
		{"another gateway", map[string]any{"session_id": who.SessionID, "epoch": who.Epoch, "player_id": "victim", "gateway": "gw-other"}, codes.GatewayMismatch},
		{"no such session", map[string]any{"session_id": 999999, "epoch": 1, "player_id": "victim", "gateway": "gw-test"}, codes.SessionNotFound},
	} {
		var got struct{ Result any }
		call(t, attacker, routeForge, tc.ref, &got)
		if got.Result != string(tc.want) {
			t.Errorf("%s: %v, want %s", tc.name, got.Result, tc.want)
		}
	}
	// The exact current ref is accepted: the check is the ref, not who
	// asks (services are trusted; clients never hold refs).
	var got struct{ Result any }
	call(t, attacker, routeForge, map[string]any{"session_id": who.SessionID, "epoch": who.Epoch, "player_id": "victim", "gateway": "gw-test"}, &got)
	if got.Result != true {
		t.Fatalf("current ref: %v", got.Result)
	}
	wiretest.Eventually(t, "the one accepted push", func() bool { return pushed.has(`{"forged":true}`) })
	pushed.mu.Lock()
	n := len(pushed.bodies)
	pushed.mu.Unlock()
	if n != 1 { // only the accepted forge: the refused ones never arrive
		t.Fatalf("victim got %d pushes, want 1", n)
	}
}
