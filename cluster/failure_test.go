package cluster_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/testutil"
)

// onNATS starts nodes on a NATS server of the test's own, so that any of
// them can be killed, and NATS itself restarted.
type onNATS struct {
	nats *testNATS
}

func newNATS(t *testing.T) onNATS { return onNATS{startNATS(t)} }

func (o onNATS) spec(name, services string, gateway bool) nodeSpec {
	return nodeSpec{name: name, services: services, gateway: gateway, cluster: "nats: " + o.nats.url()}
}

// TestUnhostedUnavailableAtOnce: with no node hosting player, a login's
// bind raises unavailable at once; with no node hosting auth, a frame on a
// listener whose entry service it is gets unavailable at once, and so do a
// call and a send to calc.
func TestUnhostedUnavailableAtOnce(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	a := startNode(t, o.spec("gw-a", "[auth, front]", true))
	b := startNode(t, o.spec("gw-b", "[]", true))
	waitReady(t, a, b)
	for _, tc := range []struct {
		gw    *node
		route uint32
		req   any
	}{
		{a, routeLogin, map[string]string{"user": "alice"}}, // bind to player: no host
		{b, routeLogin, map[string]string{"user": "bob"}},   // auth itself: no host on B's side either? A hosts it
	} {
		c := dial(t, tc.gw, "game")
		start := time.Now()
		err := try(c, tc.route, tc.req, nil)
		if codeOf(err) != codes.Unavailable {
			t.Fatalf("%s login: %v, want unavailable", tc.gw.name, err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("%s login: unavailable after %v, want at once", tc.gw.name, d)
		}
	}
	c := dial(t, a, "front")
	var r struct {
		OK   bool   `json:"ok"`
		Code string `json:"code"`
		Sent bool   `json:"sent"`
	}
	call(t, c, routeCall, map[string]any{"method": "add", "arg": map[string]int{"a": 1, "b": 1}}, &r)
	if r.OK || r.Code != string(codes.Unavailable) {
		t.Errorf("call to an unhosted calc: %+v", r)
	}
	call(t, c, routeSend, map[string]any{"method": "note", "arg": 1}, &r)
	if r.Sent || r.Code != string(codes.Unavailable) {
		t.Errorf("send to an unhosted calc: %+v", r)
	}
	// A gateway whose entry service has no live host: B alone.
	a.Stop()
	within(t, 2*time.Second, "B sees A leave", func() bool { return gauge(b) == 1 })
	// The refusal is the edge's (SPEC §5): counted once as unavailable.
	dropped := b.Srv.Metrics.EdgeDropped.WithLabelValues("unavailable")
	before := readGauge(dropped)
	start := time.Now()
	if err := try(dial(t, b, "game"), routeLogin, map[string]string{"user": "carol"}, nil); codeOf(err) != codes.Unavailable {
		t.Errorf("login with no auth host: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("unavailable after %v, want at once", d)
	}
	if n := readGauge(dropped) - before; n != 1 {
		t.Errorf("edge_dropped{unavailable} grew by %v, want 1", n)
	}
}

// TestServiceNodeKilled: when the node hosting player dies without a
// word, each gateway answers the requests in flight to it with
// unavailable and closes the sessions bound to it with
// session.target_lost, within node_timeout plus one second; a call
// waiting on it raises unavailable.
func TestServiceNodeKilled(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	a := startNode(t, o.spec("gw-a", "[auth, front]", true))
	b := startNode(t, o.spec("gw-b", "[]", true))
	s := startNode(t, o.spec("svc", "[player, room, calc]", false))
	waitReady(t, a, b, s)
	alice, bob := dial(t, a, "game"), dial(t, b, "game")
	aliceN, bobN := watchNotices(alice), watchNotices(bob)
	login(t, alice, "alice")
	login(t, bob, "bob")
	front := dial(t, a, "front")
	// A call in flight to calc when its node dies.
	inflight := make(chan map[string]any, 1)
	go func() {
		var r map[string]any
		_ = try(front, routeCall, map[string]any{"method": "slow", "arg": 1500}, &r)
		inflight <- r
	}()
	time.Sleep(100 * time.Millisecond) // let the call reach calc
	killed := time.Now()
	s.kill(t)
	deadline := nodeTimeout + time.Second
	for _, w := range []struct {
		who string
		n   *notices
	}{{"alice on A", aliceN}, {"bob on B", bobN}} {
		within(t, deadline-time.Since(killed), w.who+" gets session.target_lost", func() bool { return w.n.has(codes.SessionTargetLost) })
	}
	select {
	case r := <-inflight:
		if r["ok"] != false || r["code"] != string(codes.Unavailable) {
			t.Errorf("call in flight: %v, want unavailable", r)
		}
	case <-time.After(deadline):
		t.Error("call in flight: no answer")
	}
	if got := readGauge(a.Srv.Metrics.EnableCluster().NodeLost); got != 1 {
		t.Errorf("node lost = %v, want 1", got)
	}
	if got := a.ClosedTotal("target_lost"); got != 1 {
		t.Errorf("A closed target_lost = %v, want 1", got)
	}
}

// TestGatewayKilled: when a gateway dies, the player VMs run
// client_disconnected(..., "gateway_lost") for its sessions: bob (on B)
// leaves the room within node_timeout plus one second.
func TestGatewayKilled(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	a := startNode(t, o.spec("gw-a", "[auth, front]", true))
	b := startNode(t, o.spec("gw-b", "[]", true))
	s := startNode(t, o.spec("svc", "[player, room, calc]", false))
	waitReady(t, a, b, s)
	alice, bob := dial(t, a, "game"), dial(t, b, "game")
	login(t, alice, "alice")
	login(t, bob, "bob")
	room := map[string]string{"room": "lobby"}
	call(t, alice, routeJoinRoom, room, nil)
	call(t, bob, routeJoinRoom, room, nil)
	killed := time.Now()
	b.kill(t)
	within(t, nodeTimeout+time.Second-time.Since(killed), "bob leaves the room", func() bool {
		var joined struct{ Members int }
		call(t, alice, routeJoinRoom, room, &joined)
		return joined.Members == 1
	})
	if s.Logs.Count("cluster: node lost") == 0 {
		t.Error("no node-lost log line on svc")
	}
}

// TestGracefulStopSeenAtOnce: a service node that stops says so when its
// drain ends: the gateways close its sessions with session.target_lost at
// once, not after node_timeout, and do not count it as lost.
func TestGracefulStopSeenAtOnce(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	a := startNode(t, o.spec("gw-a", "[auth, front]", true))
	s := startNode(t, o.spec("svc", "[player, room, calc]", false))
	waitReady(t, a, s)
	alice := dial(t, a, "game")
	n := watchNotices(alice)
	login(t, alice, "alice")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	within(t, nodeTimeout/2, "target_lost at once", func() bool { return n.has(codes.SessionTargetLost) })
	t.Logf("target_lost %v after the stop returned", time.Since(stopped))
	if got := readGauge(a.Srv.Metrics.EnableCluster().NodeLost); got != 0 {
		t.Errorf("node lost = %v after a graceful leave, want 0", got)
	}
}

// TestStartupRefusals: a taken node name, an instance already hosted and a
// different route table or instances fail the start, naming the other
// node.
func TestStartupRefusals(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	a := startNode(t, o.spec("gw-a", "[auth, front]", true))
	s := startNode(t, o.spec("svc", "[player, room, calc]", false))
	waitReady(t, a, s)
	other := o.spec("svc-2", "[player/1]", false)
	other.instances = 3
	for _, tc := range []struct {
		spec nodeSpec
		want string
	}{
		{o.spec("gw-a", "[]", true), `node name "gw-a" is taken by a live node`},
		{o.spec("svc-2", "[player/1]", false), "player/1 is already hosted by node svc"},
		{other, "differ from node"},
	} {
		_, err := tryNode(t, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.spec.name, err, tc.want)
		}
	}
}

// TestDuplicateLoginAcrossGateways: kick_old kicks the old session on the
// other gateway before the new bind returns; reject_new refuses the new
// login while any gateway holds the player.
func TestDuplicateLoginAcrossGateways(t *testing.T) {
	for _, policy := range []string{"kick_old", "reject_new"} {
		t.Run(policy, func(t *testing.T) {
			testutil.CheckGoroutines(t)
			o := newNATS(t)
			spec := func(name, services string, gw bool) nodeSpec {
				s := o.spec(name, services, gw)
				s.session = "duplicate_login: " + policy
				return s
			}
			a := startNode(t, spec("gw-a", "[auth, front]", true))
			b := startNode(t, spec("gw-b", "[]", true))
			s := startNode(t, spec("svc", "[player, room, calc]", false))
			waitReady(t, a, b, s)
			old := dial(t, a, "game")
			oldN := watchNotices(old)
			login(t, old, "alice")
			call(t, old, routeJoinRoom, map[string]string{"room": "r"}, nil)
			fresh := dial(t, b, "game")
			err := try(fresh, routeLogin, map[string]string{"user": "alice"}, nil)
			switch policy {
			case "kick_old":
				if err != nil {
					t.Fatalf("new login: %v", err)
				}
				if !oldN.has(codes.SessionKicked) {
					// The kick was done before the bind returned; its
					// notice is on its way.
					within(t, time.Second, "old session kicked", func() bool { return oldN.has(codes.SessionKicked) })
				}
				within(t, time.Second, "old connection closed", func() bool {
					select {
					case <-old.Done():
						return true
					default:
						return false
					}
				})
				call(t, fresh, routeJoinRoom, map[string]string{"room": "r"}, nil)
			case "reject_new":
				if codeOf(err) != codes.PlayerOnline {
					t.Fatalf("new login: %v, want %s", err, codes.PlayerOnline)
				}
				call(t, old, routeMove, map[string]int{"x": 1, "y": 1}, nil) // the old one plays on
				old.Close()
				within(t, 2*time.Second, "login once the old session left", func() bool {
					return try(dial(t, b, "game"), routeLogin, map[string]string{"user": "alice"}, nil) == nil
				})
			}
		})
	}
}

// TestNATSRestartUnderLoad: NATS goes away and comes back while clients
// on A make requests served on S: every request gets exactly one answer
// (ok, or unavailable while NATS is away), and requests succeed again once
// it is back.
func TestNATSRestartUnderLoad(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	spec := func(name, services string, gw bool) nodeSpec {
		s := o.spec(name, services, gw)
		s.session = "rate_limit: {per_second: 0}"
		return s
	}
	a := startNode(t, spec("gw-a", "[auth, front]", true))
	s := startNode(t, spec("svc", "[player, room, calc]", false))
	waitReady(t, a, s)
	const workers = 8
	var ok, unavailable, other, hung atomic.Int64
	var sample atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		c := dial(t, a, "front")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
				var r struct {
					OK   bool   `json:"ok"`
					Code string `json:"code"`
				}
				err := c.Call(ctx, routeCall, map[string]any{"method": "add", "arg": map[string]int{"a": w, "b": i}}, &r)
				cancel()
				switch {
				case err == context.DeadlineExceeded:
					hung.Add(1)
				case err != nil:
					sample.Store(err.Error())
					other.Add(1)
				case r.OK:
					ok.Add(1)
				case r.Code == string(codes.Unavailable):
					unavailable.Add(1)
				default:
					sample.Store(r.Code)
					other.Add(1)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	natsUp := func(n *node) float64 { return readGauge(n.Srv.Metrics.EnableCluster().NATSConnected) }
	if natsUp(a) != 1 || natsUp(s) != 1 {
		t.Errorf("shield_cluster_nats_connected %v, %v with NATS up; want 1", natsUp(a), natsUp(s))
	}
	o.nats.stop()
	within(t, 2*time.Second, "shield_cluster_nats_connected 0 with NATS away", func() bool { return natsUp(a) == 0 && natsUp(s) == 0 })
	time.Sleep(300 * time.Millisecond)
	o.nats.start()
	waitReady(t, a, s)
	if natsUp(a) != 1 || natsUp(s) != 1 {
		t.Errorf("shield_cluster_nats_connected %v, %v with NATS back; want 1", natsUp(a), natsUp(s))
	}
	before := ok.Load()
	within(t, 3*time.Second, "requests succeed again", func() bool { return ok.Load() > before+50 })
	close(stop)
	wg.Wait()
	t.Logf("ok %d, unavailable %d, other %d (%v), unanswered %d", ok.Load(), unavailable.Load(), other.Load(), sample.Load(), hung.Load())
	if hung.Load() != 0 || other.Load() != 0 {
		t.Errorf("%d requests unanswered, %d other outcomes", hung.Load(), other.Load())
	}
	if unavailable.Load() == 0 {
		t.Error("no request saw NATS away")
	}
	_ = client.ErrClosed
}
