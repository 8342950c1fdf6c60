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

// TestVerdictsWeighed is docs/cluster.md "Verdicts": a DEAD message about
// svc, said by c with a side, in a cluster of gw-a, svc and c. From a live
// c it is taken unless c's side is a cut-off node's (under half of the
// three, while svc hears them all); then svc declares c dead, and c, hearing
// a verdict from a side of two, exits. From a c that svc had declared dead
// (both sides judged), the larger side wins, a tie goes to the lower first
// name; the loser exits, the winner says its verdict again.
func TestVerdictsWeighed(t *testing.T) {
	testutil.CheckGoroutines(t)
	for _, tc := range []struct {
		name      string
		mutual    bool   // svc declared c dead first
		side      uint32 // c's side
		first     string // the lowest name on c's side
		svcExits  bool
		cExits    bool // for svc's verdict (the cut-off case)
		svcJudges bool // svc declares c dead, or says so again
	}{
		{name: "a cut-off node's verdict", side: 1, first: "c", cExits: true, svcJudges: true},
		{name: "a verdict from two of three", side: 2, first: "c", svcExits: true},
		{name: "no side: taken as it is", side: 0, svcExits: true},
		{name: "both judged: the larger side wins", mutual: true, side: 3, first: "c", svcExits: true},
		{name: "both judged: the smaller side loses", mutual: true, side: 1, first: "c", svcJudges: true},
		{name: "both judged: a tie to the lower first name", mutual: true, side: 2, first: "a", svcExits: true},
		{name: "both judged: a tie, svc's side first", mutual: true, side: 2, first: "z", svcJudges: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newNATS(t)
			a := startNode(t, o.spec("gw-a", "[auth, front]", true))
			s := startNode(t, o.spec("svc", "[player, room, calc]", false))
			c := startNode(t, o.spec("c", "[]", true))
			waitReady(t, a, s, c)
			nc, err := nats.Connect(o.nats.url())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			presence, err := nc.SubscribeSync("shield.presence")
			if err != nil {
				t.Fatal(err)
			}
			publish := func(m *pb.Presence) {
				t.Helper()
				b, _ := proto.Marshal(m)
				if err := nc.Publish("shield.presence", b); err != nil {
					t.Fatal(err)
				}
			}
			cInc := c.Srv.Cluster.Incarnation()
			if tc.mutual {
				// svc and c hear gw-a (a side of two of three) declare c
				// dead; c exits (it stops saying anything).
				publish(&pb.Presence{Kind: pb.Presence_DEAD, Node: "gw-a", Incarnation: a.Srv.Cluster.Incarnation(),
					DeadNode: "c", DeadIncarnation: cInc, Side: 2, SideFirst: "gw-a"})
				<-c.fatal
				within(t, 2*time.Second, "svc drops c", func() bool { return gauge(s) == 2 })
				// gw-a (which does not hear itself) judges the silent c.
				within(t, 3*time.Second, "gw-a drops c", func() bool { return gauge(a) == 2 })
			}
			publish(&pb.Presence{Kind: pb.Presence_DEAD, Node: "c", Incarnation: cInc,
				DeadNode: "svc", DeadIncarnation: s.Srv.Cluster.Incarnation(), Side: tc.side, SideFirst: tc.first})
			if tc.svcJudges {
				deadline := time.Now().Add(2 * time.Second)
				for {
					msg, err := presence.NextMsg(time.Until(deadline))
					if err != nil {
						t.Fatal("svc did not declare c dead")
					}
					var m pb.Presence
					if proto.Unmarshal(msg.Data, &m) == nil && m.Kind == pb.Presence_DEAD && m.Node == "svc" && m.DeadNode == "c" {
						if m.Side != 2 || m.SideFirst != "gw-a" {
							t.Errorf("svc's verdict: side %d first %q, want 2, gw-a", m.Side, m.SideFirst)
						}
						break
					}
				}
			}
			select {
			case err := <-s.fatal:
				if !tc.svcExits {
					t.Fatalf("svc exited: %v", err)
				}
			case <-time.After(time.Second):
				if tc.svcExits {
					t.Fatal("svc did not exit")
				}
				if !s.Srv.Cluster.Ready() {
					t.Error("svc is not ready")
				}
			}
			if tc.cExits {
				select {
				case err := <-c.fatal:
					if !strings.Contains(err.Error(), "declared this node dead") {
						t.Errorf("c: %v", err)
					}
				case <-time.After(2 * time.Second):
					t.Fatal("the cut-off node did not exit")
				}
				within(t, 2*time.Second, "gw-a drops c", func() bool { return gauge(a) == 2 })
			}
		})
	}
}
