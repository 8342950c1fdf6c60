package acceptance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestRejectNew: under reject_new a second login of an online player fails
// with client_rpc.player_online; the first session plays on, and the
// refused one may log in as someone else.
func TestRejectNew(t *testing.T) {
	e := startEdge(t, "  duplicate_login: reject_new")
	first, second := e.client(t, "idlen"), e.client(t, "typelen")
	loginAs(t, first, "grace")
	if code := callCode(t, second, rLogin, map[string]string{"user": "grace"}); code != codes.PlayerOnline {
		t.Fatalf("second login: %q", code)
	}
	var who ref
	call(t, first, rWhoami, nil, &who)
	if who.PlayerID != "grace" || who.Epoch != 2 {
		t.Fatalf("first session after the refused login: %+v", who)
	}
	var refused ref
	call(t, second, rWhoami, nil, &refused)
	if refused.PlayerID != "" || refused.Epoch != 1 {
		t.Fatalf("refused session: %+v", refused)
	}
	loginAs(t, second, "heidi")
	select {
	case <-first.Done():
		t.Fatal("the first session was closed")
	default:
	}
	if n := e.Logs.Count("client_disconnected"); n != 0 {
		t.Fatalf("%d disconnects under reject_new", n)
	}
}

// TestKickedReplyNotDelivered: a request in flight when its session is
// kicked (the player logged in elsewhere) is answered to nobody: neither
// its reply nor a push to its old ClientContext reaches the player's new
// session.
func TestKickedReplyNotDelivered(t *testing.T) {
	e := startEdge(t, "")
	old := e.client(t, "idlen")
	notices := make(chan string, 1)
	old.OnNotice(func(code, _ string) { notices <- code })
	oldRef := loginAs(t, old, "ivan")

	answered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		answered <- old.Call(ctx, rSleep, map[string]any{"ms": 1000, "push": true}, nil)
	}()
	e.Logs.WaitFor(t, "sleeping", "session_id", fmt.Sprint(oldRef.SessionID))
	droppedBefore := testutil.ToFloat64(e.Srv.Metrics.DroppedResponses)

	cur := e.raw(t, "idlen")
	cur.Send(envelope.Frame{Kind: envelope.Request, RouteID: rLogin, RequestID: 1, Body: []byte(`{"user":"ivan"}`)})
	cur.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rLogin, RequestID: 1})

	select {
	case code := <-notices:
		if code != string(codes.SessionKicked) {
			t.Fatalf("old session's notice %q", code)
		}
	case <-time.After(patience):
		t.Fatal("no session.kicked notice")
	}
	select {
	case err := <-answered:
		if !errors.Is(err, client.ErrClosed) {
			t.Fatalf("the kicked session's call: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("the kicked session's call never ended")
	}
	i := e.Logs.WaitFor(t, "late_push", "session_id", fmt.Sprint(oldRef.SessionID))
	if got := e.Logs.Entry(i).Attrs["code"]; got != string(codes.SessionNotFound) {
		t.Fatalf("the late push to the kicked session said %q", got)
	}
	wiretest.Eventually(t, "the late reply dropped", func() bool {
		return testutil.ToFloat64(e.Srv.Metrics.DroppedResponses) == droppedBefore+1
	})
	cur.ExpectNothing(200 * time.Millisecond)
	e.Logs.WaitFor(t, "client_disconnected", "session_id", fmt.Sprint(oldRef.SessionID), "player_id", "ivan", "reason", "kicked")
}

// TestDisconnectReasons: closing the connection runs client_disconnected
// in the session's target with the player and reason "closed"; a session
// that never logged in leaves the same way, without a player.
func TestDisconnectReasons(t *testing.T) {
	e := startEdge(t, "")
	c := e.client(t, "delimiter")
	r := loginAs(t, c, "judy")
	anon := e.client(t, "typelen")
	var who ref
	call(t, anon, rWhoami, nil, &who)
	before := e.ClosedTotal("closed")
	c.Close()
	e.Logs.WaitFor(t, "client_disconnected", "session_id", fmt.Sprint(r.SessionID), "player_id", "judy",
		"epoch", "2", "reason", "closed")
	anon.Close()
	e.Logs.WaitFor(t, "client_disconnected", "session_id", fmt.Sprint(who.SessionID), "player_id", "",
		"epoch", "1", "reason", "closed")
	wiretest.Eventually(t, "closes counted", func() bool { return e.ClosedTotal("closed") == before+2 })
	wiretest.Eventually(t, "no live session", func() bool { return testutil.ToFloat64(e.Srv.Metrics.Sessions) == 0 })
}

// TestDrain: Server.Stop stops accepting, serves live sessions through
// shutdown_grace, then sends each a gateway.draining notice and closes it;
// client_disconnected runs with "draining" before the VM's stop.
func TestDrain(t *testing.T) {
	e := startEdge(t, "  shutdown_grace: 2s")
	c := e.client(t, "idlen")
	r := loginAs(t, c, "ken")
	notices := make(chan string, 1)
	c.OnNotice(func(code, _ string) { notices <- code })

	stopped := make(chan error, 1)
	started := time.Now()
	go func() { stopped <- e.Stop() }()

	// Not accepting any more ...
	wiretest.Eventually(t, "the listener closed", func() bool {
		nc, err := net.DialTimeout("tcp", e.Addr("idlen"), time.Second)
		if err != nil {
			return true
		}
		nc.Close()
		return false
	})
	// ... but the live session is still served during the grace: an
	// answer proves it (once the grace ends the session is closed, and
	// the call would fail), whatever the clock says.
	var echoed json.RawMessage
	call(t, c, rEcho, map[string]int{"n": 1}, &echoed)

	select {
	case code := <-notices:
		if code != string(codes.GatewayDraining) {
			t.Fatalf("notice %q", code)
		}
	case <-time.After(patience):
		t.Fatal("no gateway.draining notice")
	}
	if el := time.Since(started); el < 2*time.Second {
		t.Fatalf("drained after %v, before shutdown_grace", el)
	}
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("the session was not closed")
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("Stop did not return")
	}
	left := e.Logs.Find("client_disconnected", "session_id", fmt.Sprint(r.SessionID), "player_id", "ken", "reason", "draining")
	stop := e.Logs.Find("stop", "service", "edge")
	if left < 0 || stop < 0 || left > stop {
		t.Fatalf("client_disconnected at %d, stop at %d: want both, in that order\n%s", left, stop, e.Logs.Dump())
	}
	if e.Logs.Find("stop", "service", "spin") < 0 {
		t.Fatal("the spin service's stop did not run")
	}
	// The probes that found the listener still open were drained too.
	if got := e.ClosedTotal("draining"); got < 1 {
		t.Fatalf("draining closes: %v", got)
	}
}
