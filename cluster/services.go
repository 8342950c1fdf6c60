package cluster

import (
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/session"
)

// The gateway.Services half: what the local gateway sends its sessions'
// targets. An instance hosted here gets it directly, as in one process;
// another one over NATS, one message per frame.

// Entry is a new session's first target: session_id % instances, whether
// or not a node hosts it now (a frame to an instance without a live host
// gets unavailable; SPEC §10 allows such a listener).
func (n *Node) Entry(service string, sessionID uint64) (egress.ActorID, *codes.Error) {
	return n.rt.Entry(service, sessionID)
}

// Crowded reports whether target is hosted here and its control lane is
// at its limit (service.Runtime.Crowded). A target on another node is
// never crowded as this gateway sees it: that node's lane is bounded by
// the sessions of every gateway that feeds it (docs/cluster.md).
func (n *Node) Crowded(target egress.ActorID) bool {
	return n.rt.Hosted(target) && n.rt.Crowded(target)
}

// Deliver puts a client frame on its target's business lane, here or on
// the node hosting the target. A remote target answers on this node's
// reply subject; until then the frame is pending, and the death of that
// node, a lost connection or the budget settles it instead.
func (n *Node) Deliver(target egress.ActorID, in *ingress.ClientIngress) *codes.Error {
	if n.local(target) {
		return n.rt.Deliver(target, in)
	}
	node := n.peers.hostOf(target)
	if node == "" {
		return unavailable("no live node hosts %s/%d", target.Service, target.Instance)
	}
	if !n.connected.Load() {
		return unavailable("the cluster's NATS is unreachable")
	}
	// The message is made before the frame is registered: once it is, a
	// lost connection may settle it (and its ingress be released) on
	// another goroutine.
	var id uint64
	ok := false
	now := time.Now()
	err := pooled(func(b []byte) []byte { return appendIngress(b, in, now) }, func(msg []byte) error {
		if id, ok = n.pend.add(&pending{node: node, target: target, in: in,
			deadline: in.Received.Add(in.BudgetWithin(n.budgets[target.Service]) + slack)}); !ok {
			return nil
		}
		return n.nc.PublishRequest(n.subj.instance(target), n.subj.reply(n.name, id), msg)
	})
	if !ok {
		return unavailable("node %s is stopping", n.name)
	}
	if err != nil {
		if n.pend.take(id) == nil {
			return nil // a lost connection settled it meanwhile: answered once, there
		}
		return unavailable("cannot reach node %s: %v", node, err)
	}
	n.cm.Out(metrics.KindIngress)
	return nil
}

// Control puts a session message on its target's control lane, here or
// on the node hosting the target. A target with no live host is gone, and
// so is the message.
func (n *Node) Control(target egress.ActorID, m any) {
	if n.local(target) {
		n.owners.lifecycle(target, m)
		n.rt.Control(target, m)
		return
	}
	msg := lifecyclePB(m)
	if msg == nil || n.peers.hostOf(target) == "" || !n.connected.Load() {
		return
	}
	if err := n.nc.Publish(n.subj.instance(target), marshal(msg)); err == nil {
		n.cm.Out(metrics.KindControl)
	}
}

// onInstance handles what other nodes send one of this node's instances.
func (n *Node) onInstance(target egress.ActorID) nats.MsgHandler {
	return func(msg *nats.Msg) {
		if n.fastInstance(target, msg) {
			return
		}
		var m pb.Instance
		if err := proto.Unmarshal(msg.Data, &m); err != nil {
			n.log.Warn("cluster: undecodable message dropped", "subject", msg.Subject, "error", err)
			return
		}
		now := time.Now()
		switch k := m.Kind.(type) {
		case *pb.Instance_Ingress:
			n.cm.In(metrics.KindIngress)
			n.onIngress(target, ingressOf(k.Ingress, msg.Reply, now))
		case *pb.Instance_IngressBatch:
			n.cm.In(metrics.KindIngress)
			n.onIngressBatch(target, n.ingressBatchOf(k.IngressBatch, msg.Reply, now))
		case *pb.Instance_Call:
			n.cm.In(metrics.KindCall)
			c := callOf(k.Call, msg.Reply, now)
			if err := n.rt.Route(c); err != nil && c.ID != 0 {
				n.Return(&luavm.Result{To: c.From, ID: c.ID, Gen: c.Gen, Err: err, Reply: c.Reply})
			}
		case *pb.Instance_Lifecycle:
			n.cm.In(metrics.KindControl)
			if lm := lifecycleOf(k.Lifecycle); lm != nil {
				n.owners.lifecycle(target, lm)
				n.rt.Control(target, lm)
			}
		case *pb.Instance_Claim:
			n.cm.In(metrics.KindControl)
			holder, held := n.owners.claim(k.Claim.PlayerId, refOf(k.Claim.Candidate), k.Claim.Reject, n.liveGateway, now)
			reply := &pb.ClaimReply{}
			if held {
				reply.Holder = refPB(holder)
			}
			n.reply(msg.Reply, reply, metrics.KindControl)
		case *pb.Instance_Release:
			n.cm.In(metrics.KindControl)
			n.owners.release(k.Release.PlayerId, refOf(k.Release.Candidate))
		default:
			n.log.Warn("cluster: unknown instance message dropped", "subject", msg.Subject)
		}
	}
}

// fastInstance takes the hop's own messages, a frame or a batch of them,
// as fastwire reads them; false: it declined, proto.Unmarshal's turn.
func (n *Node) fastInstance(target egress.ActorID, msg *nats.Msg) bool {
	num, b, ok := readInstance(msg.Data)
	if !ok {
		return false
	}
	now := time.Now()
	switch num {
	case fInstanceIngress:
		in := &ingress.ClientIngress{}
		if _, ok := readIngress(b, in, now); !ok {
			return false
		}
		in.Reply = msg.Reply
		n.cm.In(metrics.KindIngress)
		n.onIngress(target, in)
	case fInstanceIngressBatch:
		ins, ok := n.readIngressBatch(b, replyPrefix(msg.Reply), now)
		if !ok {
			return false
		}
		n.cm.In(metrics.KindIngress)
		n.onIngressBatch(target, ins)
	default:
		return false
	}
	return true
}

// onIngress takes a lone frame into target's lane, or answers it.
func (n *Node) onIngress(target egress.ActorID, in *ingress.ClientIngress) {
	n.owners.seen(target, in.Client.Ref)
	if err := n.rt.Deliver(target, in); err != nil {
		n.Respond(in.Answer(target.Service, nil, err))
	}
}

// liveGateway reports whether name is this gateway or a live one.
func (n *Node) liveGateway(name string) bool {
	return name == n.name && n.gw != nil || n.peers.isGateway(name)
}

// reply publishes m on a reply subject, if there is one.
func (n *Node) reply(subject string, m proto.Message, kind metrics.MessageKind) {
	if subject == "" || n.dead.Load() {
		return
	}
	if err := n.nc.Publish(subject, marshal(m)); err == nil {
		n.cm.Out(kind)
	}
}

// closeTargetLost closes every session of this gateway whose target p
// hosted, and that no live node hosts now, with session.target_lost (SPEC
// §10): no Disconnected, its target is gone.
func (n *Node) closeTargetLost(p *peer) {
	lost := map[egress.ActorID]bool{}
	for _, a := range p.instances {
		if !n.rt.Hosted(a) && n.peers.hostOf(a) == "" {
			lost[a] = true
		}
	}
	if len(lost) == 0 {
		return
	}
	notice := &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionTargetLost),
		Message: "the node hosting this session's service is gone"}
	for _, s := range n.gw.Sessions().All() {
		if lost[s.Binding().Target] {
			s.Close(session.TargetLost, notice)
		}
	}
}

func disconnected(ref egress.ClientRef, reason string) *ingress.Disconnected {
	return &ingress.Disconnected{Ref: ref, Reason: reason}
}

func unavailable(format string, args ...any) *codes.Error {
	return codes.New(codes.Unavailable, format, args...)
}

func timeoutErr(format string, args ...any) *codes.Error {
	return codes.New(codes.Timeout, format, args...)
}
