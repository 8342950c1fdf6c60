package acceptance

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// pushResult is what the push route returns.
type pushResult struct {
	Sent  int            `json:"sent"`
	Codes map[string]int `json:"codes"`
	Last  string         `json:"last"`
}

// pushTo asks the service, through c, to push to r (whatever r says).
func pushTo(t testing.TB, c *client.Client, r ref, extra map[string]any) pushResult {
	t.Helper()
	req := map[string]any{"ref": r}
	for k, v := range extra {
		req[k] = v
	}
	var res pushResult
	call(t, c, rPush, req, &res)
	return res
}

// TestEgressRejections: pushes to refs the gateway must refuse, each with
// its SPEC §7 code, in the table's order when a ref fails several, and
// each counted in shield_egress_rejected_total{reason}; the victim receives
// only the push to its real ref.
func TestEgressRejections(t *testing.T) {
	e := startEdge(t, "")
	victim, pusher := e.client(t, "idlen"), e.client(t, "typelen")
	got := make(chan string, 16)
	victim.OnPush(rBig, func(body []byte) { got <- string(body) })
	v := loginAs(t, victim, "victor")
	loginAs(t, pusher, "mallory")

	with := func(edit func(*ref)) ref {
		r := v
		edit(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		ref  ref
		want codes.Code
	}{
		{"the real ref", v, ""},
		{"another gateway", with(func(r *ref) { r.Gateway = "gw-other" }), codes.GatewayMismatch},
		{"another gateway, no such session", with(func(r *ref) { r.Gateway, r.SessionID = "gw-other", 999999 }), codes.GatewayMismatch},
		{"no such session", with(func(r *ref) { r.SessionID = 999999 }), codes.SessionNotFound},
		{"no such session, stale epoch", with(func(r *ref) { r.SessionID, r.Epoch = 999999, 1 }), codes.SessionNotFound},
		{"stale epoch", with(func(r *ref) { r.Epoch = 1 }), codes.EpochExpired},
		{"stale epoch, another player", with(func(r *ref) { r.Epoch, r.PlayerID = 1, "mallory" }), codes.EpochExpired},
		{"another player", with(func(r *ref) { r.PlayerID = "mallory" }), codes.PlayerMismatch},
		{"no player", with(func(r *ref) { r.PlayerID = "" }), codes.PlayerMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason := "ok"
			var before float64
			if tc.want != "" {
				reason = tc.want.Reason()
				before = e.EgressRejected(reason)
			}
			res := pushTo(t, pusher, tc.ref, nil)
			if tc.want == "" {
				if res.Sent != 1 {
					t.Fatalf("push to the real ref: %+v", res)
				}
				return
			}
			if res.Sent != 0 || res.Last != string(tc.want) {
				t.Fatalf("push: %+v, want %s", res, tc.want)
			}
			if got := e.EgressRejected(reason); got != before+1 {
				t.Fatalf("egress_rejected{%s} %v -> %v", reason, before, got)
			}
		})
	}
	select {
	case body := <-got:
		if body != `{"pad":""}` {
			t.Fatalf("victim got %s", body)
		}
	case <-time.After(patience):
		t.Fatal("the push to the real ref never arrived")
	}
	select {
	case body := <-got:
		t.Fatalf("the victim got a refused push: %s", body)
	case <-time.After(100 * time.Millisecond):
	}

	// Once the victim has gone, its ref names no session.
	before := e.EgressRejected("session_not_found")
	victim.Close()
	wiretest.Eventually(t, "the victim's session gone", func() bool { return e.Srv.Gateway.Sessions().Get(v.SessionID) == nil })
	if res := pushTo(t, pusher, v, nil); res.Last != string(codes.SessionNotFound) {
		t.Fatalf("push to a closed session: %+v", res)
	}
	if got := e.EgressRejected("session_not_found"); got != before+1 {
		t.Fatalf("egress_rejected{session_not_found} %v -> %v", before, got)
	}
}

// TestEgressQueueFull: pushes to a client that does not read fill its
// outbound queue, and the push that finds it full is refused with
// client_rpc.queue_full and counted, without waiting; the session stays
// until write_timeout says otherwise.
func TestEgressQueueFull(t *testing.T) {
	e := startEdge(t, "  outbound_queue: 4\n  write_timeout: 5s")
	pusher := e.client(t, "idlen")
	loginAs(t, pusher, "pusher")
	victim := e.raw(t, "idlen")
	victim.Send(envelope.Frame{Kind: envelope.Request, RouteID: rLogin, RequestID: 1, Body: []byte(`{"user":"sink"}`)})
	var v ref
	if err := json.Unmarshal(victim.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1}).Body, &v); err != nil {
		t.Fatal(err)
	}
	before := e.EgressRejected("queue_full")
	res := pushTo(t, pusher, v, map[string]any{"size": 32 << 10, "count": 1000})
	if res.Last != string(codes.QueueFull) || res.Sent < 4 {
		t.Fatalf("push flood: %+v, want queue_full after the queue and the socket filled", res)
	}
	if got := e.EgressRejected("queue_full"); got != before+1 {
		t.Fatalf("egress_rejected{queue_full} %v -> %v", before, got)
	}
	// No push waited for the client, and that needs no clock: the victim
	// never reads, so a push that waited for room would have waited until
	// write_timeout closed the session, and been refused as
	// session_not_found, not queue_full; and the session is still there.
	if e.Srv.Gateway.Sessions().Get(v.SessionID) == nil {
		t.Fatal("the session was closed before write_timeout")
	}
	// Let the write loop go: the victim leaves.
	victim.NC.Close()
	wiretest.Eventually(t, "the victim's session gone", func() bool { return e.Srv.Gateway.Sessions().Get(v.SessionID) == nil })
}
