package cluster

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/session"
)

// The egress.Sink half: what this node's services send towards clients.
// A ref naming this node's gateway reaches it directly; one naming another
// live gateway reaches it over NATS, where that gateway runs SPEC §7's
// rows after the first two; any other is gateway_mismatch.

// Respond sends a request's answer to the node that delivered the
// request (r.Reply), or to the local gateway.
func (n *Node) Respond(r *egress.Response) {
	if r.Reply == "" {
		if n.gw != nil {
			n.gw.Respond(r)
		}
		return
	}
	if n.dead.Load() {
		return
	}
	err := pooled(func(b []byte) []byte { return appendResponse(b, r) }, func(msg []byte) error { return n.nc.Publish(r.Reply, msg) })
	if err == nil {
		n.cm.Out(metrics.KindAnswer)
	}
}

// Push checks the route once, then hands each gateway its targets: the
// local one directly, each other one in one message whatever the number
// of its targets, with the bodies encoded once per codec (SPEC §7, §10).
func (n *Node) Push(p *egress.Push) []codes.Code {
	if n.gw != nil && allOn(p.Targets, n.name) {
		return n.gw.Push(p)
	}
	out := make([]codes.Code, len(p.Targets))
	if code := egress.CheckRoute(n.edge.Load().Lookup(p.RouteID)); code != "" {
		for i := range out {
			out[i] = code
		}
		n.m.EgressRejected.WithLabelValues(code.Reason()).Add(float64(len(out)))
		return out
	}
	var local []int
	remote := map[string][]int{}
	for i, t := range p.Targets {
		switch {
		case t.Gateway == n.name && n.gw != nil:
			local = append(local, i)
		case t.Gateway != n.name && n.peers.isGateway(t.Gateway):
			remote[t.Gateway] = append(remote[t.Gateway], i)
		default:
			out[i] = codes.GatewayMismatch
			n.m.EgressRejected.WithLabelValues(codes.GatewayMismatch.Reason()).Inc()
		}
	}
	if len(local) > 0 {
		res := n.gw.Push(&egress.Push{RouteID: p.RouteID, Bodies: p.Bodies, Targets: pick(p.Targets, local)})
		for j, i := range local {
			out[i] = res[j]
		}
	}
	for gw, idx := range remote {
		var err error
		if !n.connected.Load() {
			err = errors.New("disconnected")
		} else {
			err = n.nc.Publish(n.subj.gateway(gw), marshal(pushPB(p, pick(p.Targets, idx))))
		}
		if err != nil {
			for _, i := range idx {
				out[i] = codes.Unavailable
			}
			n.m.EgressRejected.WithLabelValues(codes.Unavailable.Reason()).Add(float64(len(idx)))
			continue
		}
		n.cm.Out(metrics.KindPush)
	}
	return out
}

func allOn(refs []egress.ClientRef, gateway string) bool {
	for _, r := range refs {
		if r.Gateway != gateway {
			return false
		}
	}
	return true
}

func pick(refs []egress.ClientRef, idx []int) []egress.ClientRef {
	out := make([]egress.ClientRef, len(idx))
	for j, i := range idx {
		out[j] = refs[i]
	}
	return out
}

// Kick closes the session ref names, on whichever live gateway holds it.
// On another gateway the ref's rows run there: the kick is handed over.
func (n *Node) Kick(ref egress.ClientRef, reason string) *codes.Error {
	switch {
	case ref.Gateway == n.name && n.gw != nil:
		return n.gw.Kick(ref, reason)
	case ref.Gateway == n.name || !n.peers.isGateway(ref.Gateway):
		return codes.New(codes.GatewayMismatch, "%q is not a live gateway of the cluster", ref.Gateway)
	case !n.connected.Load():
		return unavailable("the cluster's NATS is unreachable")
	}
	m := &pb.Gateway{Kind: &pb.Gateway_Kick{Kick: &pb.Kick{Ref: refPB(ref), Reason: reason}}}
	if err := n.nc.Publish(n.subj.gateway(ref.Gateway), marshal(m)); err != nil {
		return unavailable("cannot reach gateway %s: %v", ref.Gateway, err)
	}
	n.cm.Out(metrics.KindControl)
	return nil
}

// Bind asks the session's gateway for a rebind (SPEC §4, §10): a request
// that suspends only the calling coroutine. A target with no live host is
// unavailable at once, a ref naming no live gateway gateway_mismatch.
func (n *Node) Bind(b *egress.BindRequest, done egress.BindDone) {
	if !n.local(b.Target) && n.peers.hostOf(b.Target) == "" {
		done(egress.ClientRef{}, unavailable("no live node hosts %s/%d", b.Target.Service, b.Target.Instance))
		return
	}
	// A bind that moves the session away from a VM of this node: the
	// session is no longer that VM's to hear about.
	caller := b.Caller
	moved := func(ref egress.ClientRef, err *codes.Error) {
		// A bind into a room keeps the session home's (docs/rooms.md
		// §11.3): its hold of the player stays, for a second login.
		if err == nil && caller != b.Target && b.Target.Room == "" && n.rt.Hosted(caller) {
			n.owners.moved(caller, b.Ref)
		}
		done(ref, err)
	}
	switch {
	case b.Ref.Gateway == n.name && n.gw != nil:
		n.localBind(b, moved)
		return
	case b.Ref.Gateway == n.name || !n.peers.isGateway(b.Ref.Gateway):
		done(egress.ClientRef{}, codes.New(codes.GatewayMismatch, "%q is not a live gateway of the cluster", b.Ref.Gateway))
		return
	case !n.connected.Load():
		done(egress.ClientRef{}, unavailable("the cluster's NATS is unreachable"))
		return
	}
	id, ok := n.pend.add(&pending{node: b.Ref.Gateway, bind: moved, deadline: time.Now().Add(bindWait)})
	if !ok {
		done(egress.ClientRef{}, unavailable("node %s is stopping", n.name))
		return
	}
	if err := n.nc.PublishRequest(n.subj.gateway(b.Ref.Gateway), n.subj.reply(n.name, id), marshal(bindPB(b))); err != nil {
		if p := n.pend.take(id); p != nil {
			n.settle(p, unavailable("cannot reach gateway %s: %v", b.Ref.Gateway, err))
		}
		return
	}
	n.cm.Out(metrics.KindControl)
}

// onGateway handles what other nodes send this node's gateway.
func (n *Node) onGateway(msg *nats.Msg) {
	var m pb.Gateway
	if err := proto.Unmarshal(msg.Data, &m); err != nil {
		n.log.Warn("cluster: undecodable message dropped", "subject", msg.Subject, "error", err)
		return
	}
	switch k := m.Kind.(type) {
	case *pb.Gateway_Push:
		n.cm.In(metrics.KindPush)
		n.gw.Push(pushOf(k.Push)) // this gateway counts what it rejects
	case *pb.Gateway_Kick:
		n.cm.In(metrics.KindControl)
		err := n.kickHere(refOf(k.Kick.Ref), k.Kick.Reason, k.Kick.AnyEpoch)
		n.reply(msg.Reply, &pb.KickReply{Err: errPB(err)}, metrics.KindControl)
	case *pb.Gateway_Bind:
		n.cm.In(metrics.KindControl)
		reply := msg.Reply
		n.localBind(bindOf(k.Bind), func(ref egress.ClientRef, err *codes.Error) {
			r := &pb.BindReply{Err: errPB(err)}
			if err == nil {
				r.Ref = refPB(ref)
			}
			n.reply(reply, r, metrics.KindControl)
		})
	default:
		n.log.Warn("cluster: unknown gateway message dropped", "subject", msg.Subject)
	}
}

// kickHere kicks a session of this gateway. A duplicate login (anyEpoch)
// kicks the session that holds the player whatever its epoch; when it
// returns, the session has closed and its Disconnected is on its way.
func (n *Node) kickHere(ref egress.ClientRef, reason string, anyEpoch bool) *codes.Error {
	if !anyEpoch {
		return n.gw.Kick(ref, reason)
	}
	s := n.gw.Sessions().Get(ref.SessionID)
	if s == nil || s.Binding().PlayerID != ref.PlayerID {
		return nil // gone already, or no longer that player's
	}
	s.Close(session.Kicked, session.KickNotice(reason))
	<-s.Done()
	return nil
}

// localBind is a bind of a session of this gateway, made cluster-wide
// (SPEC §10): the player's owning shard, the node hosting the bind's
// target, is asked first who else holds the player. Under reject_new a
// holder refuses the bind; under kick_old the holder is kicked on its
// gateway, and the bind waits for that, so that a push to the old ref
// then gets session_not_found. The local compare-and-set on the epoch
// comes last. It waits on other nodes, so it runs on a goroutine of its
// own; done runs there.
func (n *Node) localBind(b *egress.BindRequest, done egress.BindDone) {
	reject := n.cfg.Session.DuplicateLogin == "reject_new"
	n.loops.Add(1)
	go func() {
		defer n.loops.Done()
		holder, held, err := n.claim(b, reject)
		if err != nil {
			done(egress.ClientRef{}, err)
			return
		}
		if held && reject {
			done(egress.ClientRef{}, codes.New(codes.PlayerOnline, "player %q is online on gateway %s", b.PlayerID, holder.Gateway))
			return
		}
		if held {
			n.kickHolder(holder)
		}
		n.gw.Bind(b, func(ref egress.ClientRef, err *codes.Error) {
			if err != nil {
				n.release(b)
			}
			done(ref, err)
		})
	}()
}

// claim asks the player's owning shard, here or on its node, who holds
// the player, and reserves it for b's session (unless held under reject).
func (n *Node) claim(b *egress.BindRequest, reject bool) (egress.ClientRef, bool, *codes.Error) {
	if b.Target.Room != "" || b.Caller.Room != "" {
		// Into a room, or a room's bind back home: the player's hold
		// stays with its home shard throughout (docs/rooms.md §11.3).
		return egress.ClientRef{}, false, nil
	}
	if n.rt.Hosted(b.Target) {
		holder, held := n.owners.claim(b.PlayerID, b.Ref, reject, n.liveGateway, time.Now())
		return holder, held, nil
	}
	m := &pb.Instance{Kind: &pb.Instance_Claim{Claim: &pb.Claim{PlayerId: b.PlayerID, Candidate: refPB(b.Ref), Reject: reject}}}
	var r pb.ClaimReply
	if err := n.request(n.subj.instance(b.Target), m, &r); err != nil {
		return egress.ClientRef{}, false, unavailable("the owner of player %q (%s/%d) cannot be reached: %v", b.PlayerID, b.Target.Service, b.Target.Instance, err)
	}
	return refOf(r.Holder), r.Holder != nil, nil
}

// release gives back the reservation of a bind that failed.
func (n *Node) release(b *egress.BindRequest) {
	if b.Target.Room != "" || b.Caller.Room != "" {
		return // claim took nothing
	}
	if n.rt.Hosted(b.Target) {
		n.owners.release(b.PlayerID, b.Ref)
		return
	}
	m := &pb.Instance{Kind: &pb.Instance_Release{Release: &pb.Release{PlayerId: b.PlayerID, Candidate: refPB(b.Ref)}}}
	if n.connected.Load() && n.nc.Publish(n.subj.instance(b.Target), marshal(m)) == nil {
		n.cm.Out(metrics.KindControl)
	}
}

// kickHolder kicks the session holding a player for a duplicate login
// under kick_old, and returns once it has closed (or its gateway could not
// be reached in node_timeout: its sessions are then about to be gone).
func (n *Node) kickHolder(holder egress.ClientRef) {
	const why = "logged in from another session"
	if holder.Gateway == n.name {
		_ = n.kickHere(holder, why, true)
		return
	}
	m := &pb.Gateway{Kind: &pb.Gateway_Kick{Kick: &pb.Kick{Ref: refPB(holder), Reason: why, AnyEpoch: true}}}
	var r pb.KickReply
	if err := n.request(n.subj.gateway(holder.Gateway), m, &r); err != nil {
		n.log.Warn("cluster: duplicate login: the old session's gateway did not confirm the kick", "gateway", holder.Gateway,
			"session_id", holder.SessionID, "player_id", holder.PlayerID, "error", err)
	}
}

// request is a request-reply of the rare control messages (claims,
// duplicate-login kicks), waited for on the caller's goroutine for
// node_timeout at most; no responders is an error at once.
func (n *Node) request(subject string, m, reply proto.Message) error {
	if !n.connected.Load() {
		return errors.New("the cluster's NATS is unreachable")
	}
	n.cm.Out(metrics.KindControl)
	msg, err := n.nc.Request(subject, marshal(m), n.cl.NodeTimeout)
	if err != nil {
		return err
	}
	n.cm.In(metrics.KindControl)
	return proto.Unmarshal(msg.Data, reply)
}
