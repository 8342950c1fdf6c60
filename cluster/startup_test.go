package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/testutil"
)

// TestStartedBeforeNATS (SPEC §10, docs/cluster.md "Presence, start-up and
// readiness"): nodes started while their NATS is not there yet keep
// trying, are not ready and serve no client frame meanwhile, and become
// ready within a few seconds of NATS coming up, the start-up checks run
// then.
func TestStartedBeforeNATS(t *testing.T) {
	testutil.CheckGoroutines(t)
	n := &testNATS{t: t, port: freePort(t)}
	t.Cleanup(n.stop)
	o := onNATS{n}
	a := startNode(t, o.spec("gw-a", "[auth, front]", true))
	s := startNode(t, o.spec("svc", "[player, room, calc]", false))
	deadline := time.Now().Add(700 * time.Millisecond)
	for time.Now().Before(deadline) {
		if a.Srv.Cluster.Ready() || s.Srv.Cluster.Ready() {
			t.Fatal("a node is ready without NATS")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := dial(t, a, "game")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := c.Call(ctx, routeLogin, map[string]string{"user": "alice"}, nil)
	cancel()
	t.Logf("a login before NATS: %v", err)
	if err == nil {
		t.Error("a login was served before the node was ready")
	}
	up := time.Now()
	n.start()
	waitReady(t, a, s)
	t.Logf("ready %v after NATS came up", time.Since(up).Round(time.Millisecond))
	if d := time.Since(up); d > 5*time.Second {
		t.Errorf("ready %v after NATS came up, want within 5s", d)
	}
	c2 := dial(t, a, "game")
	login(t, c2, "alice")
}

// TestLateJoinRefused: a node started while NATS is away runs the start-up
// checks once it connects; refused (an instance another node hosts), it
// never subscribes to its instances and the refusal, naming the other
// node, is fatal.
func TestLateJoinRefused(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	s := startNode(t, o.spec("svc", "[player, room, calc]", false))
	waitReady(t, s)
	o.nats.stop()
	late := startNode(t, o.spec("svc-2", "[player/1]", false))
	o.nats.start()
	select {
	case err := <-late.fatal:
		if !strings.Contains(err.Error(), "player/1 is already hosted by node svc") {
			t.Errorf("the late node's refusal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the late node was not refused within 10s of NATS coming back")
	}
	if late.Srv.Cluster.Ready() {
		t.Error("the refused node is ready")
	}
}
