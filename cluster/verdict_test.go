package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestDeclaredDeadExits: a node that hears it was declared dead (as it
// would after a pause longer than node_timeout) exits at once: its OnFatal
// runs (in a real process: status 1), it stops being ready, and the others
// drop it. A node heard from after its verdict is told again.
func TestDeclaredDeadExits(t *testing.T) {
	testutil.CheckGoroutines(t)
	o := newNATS(t)
	a := startNode(t, o.spec("gw-a", "[auth, front]", true))
	s := startNode(t, o.spec("svc", "[player, room, calc]", false))
	waitReady(t, a, s)
	nc, err := nats.Connect(o.nats.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	verdicts, err := nc.SubscribeSync("shield.presence")
	if err != nil {
		t.Fatal(err)
	}
	dead := &pb.Presence{Kind: pb.Presence_DEAD, Node: "gw-a", Incarnation: a.Srv.Cluster.Incarnation(),
		DeadNode: "svc", DeadIncarnation: s.Srv.Cluster.Incarnation()}
	b, _ := proto.Marshal(dead)
	if err := nc.Publish("shield.presence", b); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.fatal:
		if !strings.Contains(err.Error(), "declared this node dead") {
			t.Errorf("fatal: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the node declared dead did not exit")
	}
	if s.Srv.Cluster.Ready() {
		t.Error("a node declared dead is still ready")
	}
	within(t, 2*time.Second, "A drops svc", func() bool { return gauge(a) == 1 })
	// A heartbeat from the dead incarnation: A says the verdict again.
	hb := &pb.Presence{Kind: pb.Presence_HEARTBEAT, Node: "svc", Incarnation: s.Srv.Cluster.Incarnation()}
	b, _ = proto.Marshal(hb)
	if err := nc.Publish("shield.presence", b); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		msg, err := verdicts.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatal("no repeated verdict")
		}
		var m pb.Presence
		if proto.Unmarshal(msg.Data, &m) == nil && m.Kind == pb.Presence_DEAD && m.Node == "gw-a" && m.DeadNode == "svc" {
			break
		}
	}
}
