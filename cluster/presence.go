package cluster

// A node's presence (SPEC §10): the heartbeat loop, what it hears of the
// other nodes, and what it does when one leaves or falls silent. The
// peers themselves are peers.go's.

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/metrics"
)

// loop heartbeats, judges silent peers and sweeps overdue answers, until
// Close.
func (n *Node) loop() {
	defer n.loops.Done()
	beat := time.NewTicker(n.cl.Heartbeat)
	defer beat.Stop()
	check := time.NewTicker(min(n.cl.Heartbeat/4, 250*time.Millisecond))
	defer check.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-beat.C:
			if n.serving.Load() {
				n.announce(pb.Presence_HEARTBEAT)
			} else {
				// Still starting (its checks, then its VMs' init, which
				// may wait on storage): the others judge a joining node's
				// silence too, so it says it is still joining.
				n.announce(pb.Presence_JOINING)
			}
		case now := <-check.C:
			n.sweep(now)
			if !n.connected.Load() || n.dead.Load() {
				continue // its own silence is not the others'
			}
			silent := n.peers.silent(now.Add(-n.cl.NodeTimeout))
			if len(silent) == 0 || !n.linkAlive() {
				continue
			}
			n.judge(silent)
		}
	}
}

// linkAlive makes a round trip to the NATS server before this node
// declares anyone dead: a server that stalls (paused, overloaded) keeps
// the connection open but passes nothing, and every peer then looks
// silent to this node while the others hear each other. A round trip
// that fails, or is slow, is this node's own outage: it judges nobody and
// counts everyone as heard from now, as after a reconnect; what the
// server delivers late is then still news.
func (n *Node) linkAlive() bool {
	start := time.Now()
	if err := n.nc.FlushTimeout(n.cl.Heartbeat); err != nil || time.Since(start) > n.cl.Heartbeat/2 {
		n.peers.touchAll(time.Now())
		return false
	}
	return true
}

// sweep settles what waited past its deadline for an answer that never
// came (a message lost with a connection): a timeout, as the budget says.
func (n *Node) sweep(now time.Time) {
	for _, p := range n.pend.takeIf(func(p *pending) bool { return now.After(p.deadline) }) {
		n.settle(p, timeoutErr("no answer from node %s within the budget", p.node))
	}
}

// announce publishes a presence message of kind about this node.
func (n *Node) announce(kind pb.Presence_Kind) {
	m := &pb.Presence{Kind: kind, Node: n.name, Incarnation: n.self.inc, Gateway: n.self.gateway,
		TableHash: n.self.hash, StartedUnixNano: n.self.started, Links: n.links.Load()}
	if kind == pb.Presence_HEARTBEAT || kind == pb.Presence_JOINING {
		for _, a := range n.self.instances {
			m.Instances = append(m.Instances, actorPB(a))
		}
		m.Rooms = n.roomLoads()
		m.Draining = n.rt.Draining()
	}
	n.publishPresence(m)
}

func (n *Node) publishPresence(m *pb.Presence) {
	if n.dead.Load() || !n.connected.Load() {
		return
	}
	if err := n.nc.Publish(n.subj.presence(), marshal(m)); err == nil {
		n.cm.Out(metrics.KindPresence)
	}
}

// onPresence handles every node's presence messages.
func (n *Node) onPresence(msg *nats.Msg) {
	var m pb.Presence
	if err := proto.Unmarshal(msg.Data, &m); err != nil || n.dead.Load() {
		return
	}
	n.cm.In(metrics.KindPresence)
	now := time.Now()
	if m.Node == n.name && m.Incarnation == n.self.inc {
		return
	}
	switch m.Kind {
	case pb.Presence_HEARTBEAT, pb.Presence_JOINING:
		if m.Kind == pb.Presence_HEARTBEAT && n.peers.wasDeclaredDead(m.Node, m.Incarnation) {
			// It went on after the verdict (a pause, a partition): say it
			// again, so that it exits.
			n.publishPresence(n.verdict(m.Node, m.Incarnation))
			return
		}
		if m.Node == n.name {
			if n.serving.Load() {
				// Another process is starting under this node's name: it
				// hears this heartbeat and refuses.
				n.announce(pb.Presence_HEARTBEAT)
			} else {
				_, _, _ = n.peers.heard(peerOf(&m, now)) // for this node's own start-up checks
			}
			return
		}
		p := peerOf(&m, now)
		replaced, joined, relinked := n.peers.heard(p)
		if relinked {
			// It lost NATS and is back: the answers it published while
			// away are gone, so what waits on it gets unavailable now
			// rather than at its budget's end (each once; an answer that
			// still comes finds nothing).
			for _, q := range n.pend.takeIf(func(q *pending) bool { return q.node == p.name }) {
				n.settle(q, unavailable("node %s lost its NATS connection meanwhile", p.name))
			}
			n.log.Info("cluster: a node is back on NATS; what it was answering was answered unavailable", "peer", p.name)
		}
		if replaced != nil {
			// The same name, another process: the one before is dead.
			n.peers.remove(replaced.name, replaced.inc, true, now)
			n.departed(replaced, true)
		}
		if joined {
			n.cm.Nodes.Set(float64(n.peers.live() + 1))
			n.log.Info("cluster: node joined", "peer", p.name, "incarnation", p.inc, "gateway", p.gateway, "instances", instanceNames(p.instances))
		}
	case pb.Presence_PROBE:
		if n.serving.Load() {
			n.announce(pb.Presence_HEARTBEAT)
		} else if !n.joined.Load() {
			n.announce(pb.Presence_JOINING)
		}
	case pb.Presence_LEAVE:
		if p := n.peers.remove(m.Node, m.Incarnation, false, now); p != nil {
			n.departed(p, false)
		}
	case pb.Presence_DEAD:
		toMe := m.DeadNode == n.name && m.DeadIncarnation == n.self.inc
		if n.peers.wasDeclaredDead(m.Node, m.Incarnation) {
			// A verdict from a node that is itself dead here. About
			// another node it counts for nothing; about this one both
			// sides judged (a partition), and the side that outweighs
			// the other stands (verdict.go). The loser exits; the winner
			// says its verdict again.
			if toMe && n.outweighed(&m) {
				n.fatal(fmt.Errorf("cluster: node %s declared this node dead (no heartbeat for %s), and its side of %d nodes outweighs this one's: exiting, the others have moved on", m.Node, n.cl.NodeTimeout, m.Side))
				return
			}
			n.publishPresence(n.verdict(m.Node, m.Incarnation))
			return
		}
		if n.cutOff(&m) {
			// A cut-off node judged the others by its own silence: it is
			// the one to go (verdict.go).
			n.log.Warn("cluster: a verdict from a node cut off from the others: declaring it dead instead",
				"peer", m.Node, "declared", m.DeadNode, "its_side", m.Side)
			n.judge([]*peer{{name: m.Node, inc: m.Incarnation}})
			return
		}
		if toMe {
			n.fatal(fmt.Errorf("cluster: node %s declared this node dead (no heartbeat for %s): exiting, the others have moved on", m.Node, n.cl.NodeTimeout))
			return
		}
		// One node's verdict is every node's: the dead node exits.
		if p := n.peers.remove(m.DeadNode, m.DeadIncarnation, true, now); p != nil {
			n.departed(p, true)
		}
	default:
		// An unknown kind from a newer node: nothing to do with it.
	}
}

// departed is the end of p, a death (lost) or a graceful leave.
func (n *Node) departed(p *peer, lost bool) {
	n.cm.Nodes.Set(float64(n.peers.live() + 1))
	if p.joining {
		return // it never served
	}
	if lost {
		n.cm.NodeLost.Inc()
		n.log.Warn("cluster: node lost", "peer", p.name, "incarnation", p.inc, "silent_for", n.cl.NodeTimeout.String(),
			"gateway", p.gateway, "instances", instanceNames(p.instances))
	} else {
		n.log.Info("cluster: node left", "peer", p.name, "incarnation", p.inc, "gateway", p.gateway, "instances", instanceNames(p.instances))
	}
	n.afterDeparture(p)
}

// afterDeparture is SPEC §10's "when a node dies", in its order: every
// request and call in flight to it gets unavailable; then the sessions of
// this gateway bound to its instances close with session.target_lost;
// then, if it was a gateway, this node's instances hear gateway_lost for
// each of its sessions they were the targets of.
func (n *Node) afterDeparture(p *peer) {
	gone := unavailable("node %s is gone", p.name)
	for _, q := range n.pend.takeIf(func(q *pending) bool { return q.node == p.name }) {
		n.settle(q, gone)
	}
	if n.gw != nil && len(p.instances) > 0 {
		n.closeTargetLost(p)
	}
	if n.gw != nil && len(p.rooms) > 0 {
		n.roomsLost(p)
	}
	if p.gateway {
		for _, s := range n.owners.gatewayLost(p.name) {
			n.rt.Control(s.target, disconnected(s.ref, "gateway_lost"))
		}
	}
}
