package cluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/metrics"
)

// batchPair is gateway A (auth) before service node S (front and calc),
// with the count of A's outgoing ingress and incoming answer messages.
func batchPair(t *testing.T) (a, s *node, sent func(metrics.MessageKind, string) float64) {
	t.Helper()
	port := freePort(t)
	a = startNode(t, nodeSpec{name: "gw-a", services: "[auth]", gateway: true,
		cluster: fmt.Sprintf("embedded: 127.0.0.1:%d", port)})
	s = startNode(t, nodeSpec{name: "svc", services: "[player, room, front, calc]",
		cluster: fmt.Sprintf("nats: nats://127.0.0.1:%d", port)})
	waitReady(t, a, s)
	kinds := map[metrics.MessageKind]string{metrics.KindIngress: "ingress", metrics.KindAnswer: "answer"}
	sent = func(k metrics.MessageKind, dir string) float64 {
		return readGauge(a.Srv.Metrics.EnableCluster().Messages.WithLabelValues(kinds[k], dir))
	}
	return a, s, sent
}

// loggedIn is a raw idlen connection to A's game listener, logged in as
// user: its session is bound to a player VM on S, so its frames are
// admitted together (before login SPEC §5 lets them in one at a time).
func loggedIn(t *testing.T, a *node, user string) *wiretest.Conn {
	t.Helper()
	c := wiretest.Dial(t, user, a.Addr("game"), envelope.NameIdlen)
	c.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeLogin, RequestID: 1000, Body: []byte(`{"user":"` + user + `"}`)})
	if f, err := c.Next(); err != nil || f.Kind != envelope.Response {
		t.Fatalf("login %s: %v %+v", user, err, f)
	}
	return c
}

// pipelined writes n profile requests (ids 1..n) in one write and returns
// each request id's answer.
func pipelined(t *testing.T, c *wiretest.Conn, n int) map[uint64]envelope.Frame {
	t.Helper()
	send(c, n)
	return collect(t, c, n)
}

// send writes n profile requests (ids 1..n) in one write.
func send(c *wiretest.Conn, n int) {
	frames := make([]envelope.Frame, n)
	for i := range frames {
		frames[i] = envelope.Frame{Kind: envelope.Request, RouteID: routeProfile, RequestID: uint64(i + 1), Body: []byte(`{}`)}
	}
	c.Send(frames...)
}

// collect reads the answers to send's n requests, by request id.
func collect(t *testing.T, c *wiretest.Conn, n int) map[uint64]envelope.Frame {
	t.Helper()
	got := map[uint64]envelope.Frame{}
	for len(got) < n {
		f, err := c.Next()
		if err != nil {
			t.Fatalf("after %d answers: %v", len(got), err)
		}
		if _, twice := got[f.RequestID]; twice || f.RequestID == 0 || f.RequestID > uint64(n) {
			t.Fatalf("request %d answered twice, or not asked", f.RequestID)
		}
		got[f.RequestID] = f
	}
	return got
}

// TestBatchedHop (docs/cluster.md "The hop"): the 32 requests
// (max_inflight) two logged-in sessions each write in one write, to their
// player VMs on another node, are all answered, each once and to its own
// session, in fewer NATS messages than frames each way (a read's frames in
// IngressBatches, the actor steps' answers in ResponseBatches).
func TestBatchedHop(t *testing.T) {
	testutil.CheckGoroutines(t)
	a, _, sent := batchPair(t)
	alice, bob := loggedIn(t, a, "alice"), loggedIn(t, a, "bob")
	in0, out0 := sent(metrics.KindIngress, "out"), sent(metrics.KindAnswer, "in")
	const n = 32
	send(alice, n)
	send(bob, n)
	for who, got := range map[string]map[uint64]envelope.Frame{"alice": collect(t, alice, n), "bob": collect(t, bob, n)} {
		for id, f := range got {
			var r struct {
				PlayerID string `json:"player_id"`
			}
			if f.Kind != envelope.Response || json.Unmarshal(f.Body, &r) != nil || r.PlayerID != who {
				t.Errorf("%s's request %d: %v %s", who, id, f.Kind, f.Body)
			}
		}
	}
	ingress, answers := sent(metrics.KindIngress, "out")-in0, sent(metrics.KindAnswer, "in")-out0
	t.Logf("%d frames: %v ingress messages, %v answer messages", 2*n, ingress, answers)
	if ingress >= 2*n || answers >= 2*n {
		t.Errorf("%v ingress and %v answer messages for %d frames; want fewer than one a frame", ingress, answers, 2*n)
	}
	if pending := a.Srv.Cluster.Pending(); pending != 0 {
		t.Errorf("%d pendings left on A after every answer", pending)
	}
}

// TestBatchNoResponders: a batch to a node that is gone but not yet
// declared dead gets NATS's no-responders status, which answers every
// frame of it unavailable at once, not after the budget.
func TestBatchNoResponders(t *testing.T) {
	testutil.CheckGoroutines(t)
	a, s, _ := batchPair(t)
	c := loggedIn(t, a, "carol")
	s.kill(t)
	// NATS drops S's subscriptions when it has read S's connection close,
	// which is its own goroutine's business: a batch sent before then
	// reaches the dead connection and waits for S to be declared dead.
	probe, err := nats.Connect(a.Srv.Cluster.Conn().ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	wiretest.Eventually(t, "NATS without S's subscriptions", func() bool {
		for _, subject := range []string{"shield.svc.player.0", "shield.svc.player.1"} {
			if _, err := probe.Request(subject, nil, 100*time.Millisecond); !errors.Is(err, nats.ErrNoResponders) {
				return false
			}
		}
		return true
	})
	start := time.Now()
	got := pipelined(t, c, 16)
	if d := time.Since(start); d > nodeTimeout/2 {
		t.Errorf("answered after %v, want at once", d)
	}
	for id, f := range got {
		if f.Kind != envelope.Error || f.Code != string(codes.Unavailable) {
			t.Errorf("request %d: %v %s %s", id, f.Kind, f.Code, f.Body)
		}
	}
}
