package cluster

// Verdicts (docs/cluster.md "Verdicts"): a node that hears nothing from a
// peer for node_timeout declares it dead, and the dead node exits when it
// hears so. Nodes have no quorum, so a node cut off from the rest (its
// NATS server's routes broke, or it was paused) judges the others by its
// own silence; its verdicts reach them when the routes heal, and without
// weighing, the first verdict won, even the cut-off node's. So a DEAD
// message carries the sender's side (how many live nodes it heard, itself
// included, and the lowest name among them), and the receiver weighs it:
//
//   - From a node this one had declared dead itself (both sides judged:
//     a partition), about this node: the larger side wins, a tie goes to
//     the side with the bytewise-lowest name; the loser exits, the winner
//     says its verdict again.
//   - From a live node: taken, unless it is a cut-off node's: its side is
//     under half of the nodes this one knows, while this one heard over
//     half of them (itself included) within node_timeout/2 and heard the
//     node it calls dead too. Then this node declares the sender dead.
//     A node that was paused heard nobody meanwhile, so it takes the
//     verdict and exits.
//
// A verdict with no side (a node from before it) is taken as it is.

import (
	"time"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
)

// side is this node's side as it stands: the live nodes, itself included,
// how many of them it heard since recent, and the lowest name.
func (n *Node) side(recent time.Time) (live, heard int, first string) {
	t := n.peers
	t.mu.RLock()
	defer t.mu.RUnlock()
	live, heard, first = 1, 1, n.name
	for _, p := range t.byName {
		if p.joining {
			continue
		}
		live++
		if !p.last.Before(recent) {
			heard++
		}
		first = min(first, p.name)
	}
	return live, heard, first
}

// verdict is the DEAD message declaring name/inc dead, with this node's
// side.
func (n *Node) verdict(name, inc string) *pb.Presence {
	live, _, first := n.side(time.Time{})
	return &pb.Presence{Kind: pb.Presence_DEAD, Node: n.name, Incarnation: n.self.inc,
		DeadNode: name, DeadIncarnation: inc, Side: uint32(live), SideFirst: first}
}

// judge declares the peers dead (those silent past node_timeout, or a
// cut-off node's sender; only name and inc are read): all of them first,
// so that each verdict carries the side that is left.
func (n *Node) judge(silent []*peer) {
	now := time.Now()
	var gone []*peer
	for _, p := range silent {
		if q := n.peers.remove(p.name, p.inc, true, now); q != nil {
			gone = append(gone, q)
		}
	}
	for _, p := range gone {
		n.publishPresence(n.verdict(p.name, p.inc))
	}
	for _, p := range gone {
		n.departed(p, true)
	}
}

// outweighed reports whether this node, which declared m's sender dead,
// loses to m's verdict: m's side is larger, or as large with a lower
// name first (the same first, when one node was heard on both sides: the
// lower sender's name), so that of two nodes exactly one loses and the
// verdicts they send each other end.
func (n *Node) outweighed(m *pb.Presence) bool {
	if m.Side == 0 {
		return false // no side: a dead node's verdict counts for nothing, as before sides
	}
	live, _, first := n.side(time.Time{})
	if int(m.Side) != live {
		return int(m.Side) > live
	}
	if m.SideFirst != first {
		return m.SideFirst < first
	}
	return m.Node < n.name
}

// cutOff reports whether m, a verdict from a live node, is a cut-off
// node's: its side is under half of the nodes this one knows, while this
// one heard over half of them within node_timeout/2, the node it calls
// dead among them (this node included).
func (n *Node) cutOff(m *pb.Presence) bool {
	if m.Side == 0 {
		return false
	}
	recent := time.Now().Add(-n.cl.NodeTimeout / 2)
	live, heard, _ := n.side(recent)
	if 2*int(m.Side) >= live || 2*heard <= live {
		return false
	}
	return m.DeadNode == n.name || n.peers.heardSince(m.DeadNode, m.DeadIncarnation, recent)
}
