package bootstrap_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// drainGame is the reload game with a login route, and alice and bob
// logged in.
func drainGame(t *testing.T) (g *reloadGame, alice, bob *client.Client) {
	g = startReloadGame(t, map[string]string{
		"game.yaml": strings.Replace(reloadYAML, "        - {id: 3,", loginRoute+"        - {id: 3,", 1),
		"svc.lua":   loginSvc(),
	})
	alice, bob = g.dial(t), g.dial(t)
	mustCall(t, alice, 5, map[string]string{"user": "alice"})
	mustCall(t, bob, 5, map[string]string{"user": "bob"})
	return g, alice, bob
}

// waitInflight waits until player's session has n requests in flight.
func waitInflight(t *testing.T, g *reloadGame, player string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if s := g.srv.Gateway.Sessions().Player(player); s != nil && s.Inflight() == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never had %d requests in flight", player, n)
		}
	}
}

// TestAdminDrainSession: POST /admin/drain drains one session
// (docs/protocol.md §6): the heads-up with grace_ms and retry_after_ms,
// its new requests refused with client_rpc.draining and what is left of
// the hint, its work in flight answered, and at the end of the grace the
// gateway.draining notice with what is left of the hint then, and the
// close; another session is untouched, and a second drain does nothing.
func TestAdminDrainSession(t *testing.T) {
	g, alice, bob := drainGame(t)
	status := make(chan client.Status, 4)
	alice.OnStatus(func(s client.Status) { status <- s })
	bobStatus := make(chan client.Status, 4)
	bob.OnStatus(func(s client.Status) { bobStatus <- s })

	// Two calls in flight: one ends within the grace, one after it.
	short, long := make(chan error, 1), make(chan error, 1)
	go func() { _, err := call(t, alice, 2, map[string]int{"ms": 300}); short <- err }()
	go func() { _, err := call(t, alice, 2, map[string]int{"ms": 1900}); long <- err }()
	waitInflight(t, g, "alice", 2)

	start := time.Now()
	var out struct{ Drained int }
	decodeOK(t, g, "POST", "/admin/drain", `{"player_id":"alice","grace_ms":1000,"retry_after_ms":4000}`, &out)
	if out.Drained != 1 {
		t.Fatalf("drained %d, want 1", out.Drained)
	}
	if decodeOK(t, g, "POST", "/admin/drain", `{"player_id":"alice"}`, &out); out.Drained != 0 {
		t.Fatalf("a second drain drained %d, want 0", out.Drained)
	}
	select {
	case s := <-status:
		if s.Code != string(codes.GatewayDrainStarted) || s.GraceMS != 1000 || s.RetryAfterMS != 4000 {
			t.Fatalf("heads-up %+v, want drain_started with grace_ms 1000 and retry_after_ms 4000", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no drain_started status")
	}

	_, err := call(t, alice, 1, struct{}{})
	after, hinted := client.RetryAfter(err)
	if code, _ := codes.CodeOf(err); code != codes.Draining || !hinted || after <= 2*time.Second || after > 4*time.Second {
		t.Fatalf("a new request while draining: %v (retry after %v, %v), want client_rpc.draining with about 4 s", err, after, hinted)
	}
	if err := <-short; err != nil {
		t.Fatalf("the call in flight within the grace: %v", err)
	}
	if a := mustCall(t, bob, 1, struct{}{}); a.V != "v1" {
		t.Fatalf("bob's call: %+v", a)
	}

	err = <-long
	var gone *client.DisconnectedError
	if !errors.As(err, &gone) || gone.Notice == nil || gone.Notice.Code != string(codes.GatewayDraining) ||
		gone.Notice.RetryAfterMS != 3000 {
		t.Fatalf("the call still in flight when the grace ended: %v, want the gateway.draining notice with retry_after_ms 3000", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("closed %v after the drain, before its grace of 1 s", took)
	}
	select {
	case <-alice.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("alice's connection did not end")
	}
	if s := g.srv.Gateway.Sessions().Player("alice"); s != nil {
		t.Fatalf("alice's session is still there: %d", s.ID)
	}
	if a := mustCall(t, bob, 1, struct{}{}); a.V != "v1" || len(bobStatus) != 0 {
		t.Fatalf("bob after alice's drain: %+v, %d status frames", a, len(bobStatus))
	}
	_, metrics := g.adminDo(t, "GET", "/metrics", "", "")
	for _, want := range []string{
		`shield_edge_dropped_total{reason="draining"} 1`,
		`shield_sessions_closed_total{reason="draining"} 1`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestAdminDrainNow: a grace of 0 closes the session at once with the
// gateway.draining notice carrying retry_after_ms; a drain by session_id
// of a session that is not there drains nothing.
func TestAdminDrainNow(t *testing.T) {
	g, alice, bob := drainGame(t)
	id := g.srv.Gateway.Sessions().Player("alice").ID
	var out struct{ Drained int }
	if decodeOK(t, g, "POST", "/admin/drain", `{"session_id":999999}`, &out); out.Drained != 0 {
		t.Fatalf("an unknown session: drained %d", out.Drained)
	}
	// A call in flight sees the notice the close carries.
	long := make(chan error, 1)
	go func() { _, err := call(t, alice, 2, map[string]int{"ms": 1500}); long <- err }()
	waitInflight(t, g, "alice", 1)
	if decodeOK(t, g, "POST", "/admin/drain", `{"session_id":`+jsonNumber(id)+`,"grace_ms":0,"retry_after_ms":250}`, &out); out.Drained != 1 {
		t.Fatalf("drained %d, want 1", out.Drained)
	}
	var gone *client.DisconnectedError
	if err := <-long; !errors.As(err, &gone) || gone.Notice == nil || gone.Notice.Code != string(codes.GatewayDraining) ||
		gone.Notice.RetryAfterMS != 250 {
		t.Fatalf("drained at once: %v, want the gateway.draining notice with retry_after_ms 250", err)
	}
	select {
	case <-alice.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("alice's connection did not end")
	}
	if a := mustCall(t, bob, 1, struct{}{}); a.V != "v1" {
		t.Fatalf("bob's call: %+v", a)
	}
}

// TestAdminDrainBadRequests: 400 for a body naming both or neither, and
// for a grace_ms or retry_after_ms outside 0..3600000.
func TestAdminDrainBadRequests(t *testing.T) {
	g := startReloadGame(t, nil)
	for _, body := range []string{
		`{}`,
		`{"player_id":"a","session_id":1}`,
		`{"player_id":"a","grace_ms":-1}`,
		`{"player_id":"a","grace_ms":3600001}`,
		`{"player_id":"a","retry_after_ms":-5}`,
		`{"player_id":"a","retry_after_ms":"soon"}`,
		`{"player_id":"a","grace_ms":1.5}`,
	} {
		if code, out := g.adminDo(t, "POST", "/admin/drain", bearer, body); code != 400 {
			t.Errorf("%s: %d %s, want 400", body, code, out)
		}
	}
}
