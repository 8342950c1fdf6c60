package cluster

import (
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/metrics"
)

// The hop in batches (docs/cluster.md "The hop"): the frames of one
// gateway read for one remote instance travel in one IngressBatch, and
// the answers of one actor step for one gateway in one ResponseBatch; a
// lone frame or answer still travels alone, as before. So a frame costs at
// most one NATS message each way, and under load much less: NATS's cost,
// and the gateway node's, is per message.

// DeliverAll is Deliver for the frames of one read that go to one target,
// in order (the gateway's allDeliverer): a local target takes them from
// the runtime; a remote one gets them in one message, all or none.
func (n *Node) DeliverAll(target egress.ActorID, ins []*ingress.ClientIngress) (int, *codes.Error) {
	if n.local(target) {
		return n.rt.DeliverAll(target, ins)
	}
	if len(ins) == 1 {
		if err := n.Deliver(target, ins[0]); err != nil {
			return 0, err
		}
		return 1, nil
	}
	node := n.peers.hostOf(target)
	if node == "" {
		return 0, unavailable("no live node hosts %s/%d", target.Service, target.Instance)
	}
	if !n.connected.Load() {
		return 0, unavailable("the cluster's NATS is unreachable")
	}
	// Everything is read from the frames, and the message written, before
	// they are registered: once they are, a lost connection may settle
	// them (and their ingress be released) on another goroutine.
	now := time.Now()
	budget := n.budgets[target.Service]
	first := &ins[0].Client
	shared := true
	for _, in := range ins[1:] {
		c := &in.Client
		shared = shared && c.Ref == first.Ref && c.RemoteAddr == first.RemoteAddr && in.Codec == ins[0].Codec && in.Unwrap == ins[0].Unwrap
	}
	items := make([]pending, len(ins))
	ps := make([]*pending, len(ins))
	var last time.Time
	for i, in := range ins {
		deadline := in.Received.Add(in.BudgetWithin(budget) + slack)
		items[i] = pending{node: node, target: target, in: in, deadline: deadline}
		ps[i] = &items[i]
		if deadline.After(last) {
			last = deadline
		}
	}
	bid := n.pend.reserve(len(ins))
	var ids []uint64
	var ok bool
	err := pooled(func(b []byte) []byte {
		// What the decoder pays for most is the strings: when the
		// frames share them, they travel once.
		return appendIngressBatch(b, ins, shared, bid+1, now)
	}, func(msg []byte) error {
		// The batch's own pending only settles its items should NATS
		// say no one listens (its reply subject gets nothing else); it
		// goes with the last of them.
		if ids, ok = n.pend.addBatch(bid, ps, &pending{node: node, deadline: last}); !ok {
			return nil
		}
		return n.nc.PublishRequest(n.subj.instance(target), n.subj.reply(n.name, bid), msg)
	})
	if !ok {
		return 0, unavailable("node %s is stopping", n.name)
	}
	if err != nil {
		return n.unsent(ids, unavailable("cannot reach node %s: %v", node, err))
	}
	n.cm.Out(metrics.KindIngress)
	return len(ins), nil
}

// unsent takes back the items of a batch that could not be sent: all of
// them refused with err when it gets them all back; but when a lost
// connection settled some meanwhile (onDisconnect), those are answered
// already, so the others are answered err the same way, each once, and
// the gateway counts them all as taken.
func (n *Node) unsent(ids []uint64, err *codes.Error) (int, *codes.Error) {
	mine := make([]*pending, 0, len(ids))
	for _, id := range ids {
		if p := n.pend.take(id); p != nil { // the last takes the batch
			mine = append(mine, p)
		}
	}
	if len(mine) == len(ids) {
		return 0, err
	}
	for _, p := range mine {
		n.settle(p, err)
	}
	return len(ids), nil
}

// settleBatch settles what of a batch's items is still unanswered.
func (n *Node) settleBatch(p *pending, err *codes.Error) {
	for _, id := range p.batch {
		if q := n.pend.take(id); q != nil {
			n.settle(q, err)
		}
	}
}

// onIngressBatch takes a batch into target's lane, as many frames as it
// has room for; each of the others, and each frame the lane refuses, is
// answered at once.
func (n *Node) onIngressBatch(target egress.ActorID, ins []*ingress.ClientIngress) {
	for _, in := range ins {
		n.owners.seen(target, in.Client.Ref)
	}
	took, err := n.rt.DeliverAll(target, ins)
	for _, in := range ins[took:] {
		n.Respond(in.Answer(target.Service, nil, err))
	}
}

// ingressBatchOf is a batch proto.Unmarshal read (one fastwire declined):
// its items, with common's fields and the receiver's route names.
func (n *Node) ingressBatchOf(m *pb.IngressBatch, reply string, now time.Time) []*ingress.ClientIngress {
	prefix := replyPrefix(reply)
	ins := make([]*ingress.ClientIngress, len(m.Items))
	var ref egress.ClientRef
	if c := m.Common; c != nil {
		ref = refOf(c.Ref)
	}
	for i, item := range m.Items {
		in := ingressOf(item, prefix+strconv.FormatUint(item.ReplyId, 10), now)
		if c := m.Common; c != nil {
			in.Client.Ref, in.Client.RemoteAddr, in.Codec, in.Unwrap = ref, c.RemoteAddr, c.Codec, c.Unwrap
			if r := n.edge.Load().Lookup(in.Client.RouteID); r != nil {
				in.Client.Route = r.Name
			}
		}
		ins[i] = in
	}
	return ins
}

// replyPrefix is a batch's reply subject without its id: its items'
// reply subjects are it and theirs.
func replyPrefix(reply string) string {
	if i := strings.LastIndexByte(reply, '.'); i >= 0 {
		return reply[:i+1]
	}
	return reply
}

var _ egress.BatchSink = (*Node)(nil)

// RespondAll sends the answers of one actor step: those for this node's
// gateway to it in one hand-off, those for another gateway in one
// ResponseBatch per gateway (a lone one as a Response).
func (n *Node) RespondAll(rs []*egress.Response) {
	var local []*egress.Response
	for i := 0; i < len(rs); {
		r := rs[i]
		if r.Reply == "" {
			local = append(local, r)
			i++
			continue
		}
		dot := strings.LastIndexByte(r.Reply, '.')
		prefix := r.Reply[:dot+1]
		j := i + 1
		for j < len(rs) && strings.HasPrefix(rs[j].Reply, prefix) && strings.LastIndexByte(rs[j].Reply, '.') == dot {
			j++
		}
		if j-i == 1 {
			n.Respond(r)
		} else {
			n.respondBatch(prefix, rs[i:j])
		}
		i = j
	}
	if len(local) > 0 && n.gw != nil {
		n.gw.RespondAll(local)
	}
}

// respondBatch sends rs, all for the reply subjects under prefix, in one
// message to prefix + "0".
func (n *Node) respondBatch(prefix string, rs []*egress.Response) {
	if n.dead.Load() {
		return
	}
	ids := make([]uint64, 0, len(rs))
	sent := rs[:0:0]
	for _, r := range rs {
		if id, ok := replyID(r.Reply); ok {
			ids, sent = append(ids, id), append(sent, r)
		}
	}
	err := pooled(func(b []byte) []byte { return appendResponseBatch(b, ids, sent) },
		func(msg []byte) error { return n.nc.Publish(prefix+"0", msg) })
	if err == nil {
		n.cm.Out(metrics.KindAnswer)
	}
}

// onResponseBatch hands the answers of a ResponseBatch to the gateway
// with onReply's batch.
func (n *Node) onResponseBatch(msg *nats.Msg) {
	n.cm.In(metrics.KindAnswer)
	ids, responses, ok := readResponseBatch(msg.Data, n.batch.ids[:0], n.batch.responses[:0])
	rs := n.batch.rs[:0]
	known := ""
	for i := 0; ok && i < len(responses); i++ {
		rs = append(rs, egress.Response{})
		ok = readResponse(responses[i], &rs[i], known)
		known = rs[i].Service
	}
	defer func() {
		clear(responses)
		clear(rs)
		n.batch.ids, n.batch.responses, n.batch.rs = ids[:0], responses[:0], rs[:0]
	}()
	if !ok {
		var b pb.ResponseBatch
		if err := proto.Unmarshal(msg.Data, &b); err != nil {
			n.log.Warn("cluster: undecodable answer batch dropped", "subject", msg.Subject)
			return
		}
		ids, rs = b.Ids, make([]egress.Response, len(b.Responses))
		for i, r := range b.Responses {
			rs[i] = egress.Response{Body: r.Body, Service: r.Service, Err: errOf(r.Err)}
		}
	}
	if len(ids) != len(rs) {
		n.log.Warn("cluster: undecodable answer batch dropped", "subject", msg.Subject)
		return
	}
	for i, id := range ids {
		p := n.pend.take(id)
		if p == nil || p.in == nil {
			continue // late: settled already
		}
		if n.gw != nil {
			n.replies = append(n.replies, p.answer(&rs[i], rs[i].Err))
		}
	}
}

// Pending is the number of things this node awaits an answer for from
// other nodes (client frames, calls, binds, and batches of frames).
func (n *Node) Pending() int { return n.pend.Len() }
