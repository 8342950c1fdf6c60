package cluster

import (
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	pb "github.com/shieldrpc/shield/cluster/clusterpb"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/service"
)

// The service.Remote half: shield.call and shield.send to instances other
// nodes host, and the results of calls other nodes made here. Every
// message from one VM to another instance goes on that instance's one
// subject over this node's one connection, so they arrive in the order
// sent, calls and sends alike (SPEC §10).

// Route sends a call or a send to the node hosting instance to. A call
// waits for its Result on this node's reply subject; no live host is
// unavailable at once.
func (n *Node) Route(to egress.ActorID, c *luavm.Call) *codes.Error {
	node := n.peers.hostOf(to)
	switch {
	case node == "" && to.Room != "" && to.Service != service.QueueService:
		return codes.New(codes.Unavailable, "room %s: its node is not live", to.Room)
	case node == "":
		return unavailable("no live node hosts %s", instanceName(to))
	}
	return n.sendCall(node, n.subj.instance(to), c)
}

// sendCall sends a call or a send to node on subject; a call waits for
// its Result on this node's reply subject.
func (n *Node) sendCall(node, subject string, c *luavm.Call) *codes.Error {
	return n.sendCallAs(node, subject, c, false)
}

// sendCallAs is sendCall; repicked marks a room create's second pick
// (rooms.go repick), which is not passed on again.
func (n *Node) sendCallAs(node, subject string, c *luavm.Call, repicked bool) *codes.Error {
	if !n.connected.Load() {
		return unavailable("the cluster's NATS is unreachable")
	}
	now := time.Now()
	reply := ""
	var id uint64
	if c.ID != 0 {
		var ok bool
		if id, ok = n.pend.add(&pending{node: node, call: c, deadline: c.Deadline.Add(slack), repicked: repicked}); !ok {
			return unavailable("node %s is stopping", n.name)
		}
		reply = n.subj.reply(n.name, id)
	}
	data := marshal(callPB(c, now))
	var err error
	if reply == "" {
		err = n.nc.Publish(subject, data) // a send: no answer, so no reply subject
	} else {
		err = n.nc.PublishRequest(subject, reply, data)
	}
	if err != nil {
		if id != 0 {
			n.pend.take(id)
		}
		return unavailable("cannot reach node %s: %v", node, err)
	}
	n.cm.Out(metrics.KindCall)
	return nil
}

// Return sends the result of a call another node made to its reply
// subject.
func (n *Node) Return(r *luavm.Result) {
	n.reply(r.Reply, &pb.Result{Values: r.Values, Err: errPB(r.Err)}, metrics.KindReply)
}

// onReply handles every answer to what this node sent: the answer of a
// client frame, a call's result, a bind's outcome, or the no-responders
// status NATS sends when nobody was subscribed (SPEC §10: unavailable at
// once, not after a timeout). An answer to something settled already (its
// node was declared dead meanwhile) finds nothing and is dropped.
//
// The answers of client frames are handed to the gateway in batches: all
// those NATS has delivered to this subscription back to back, up to
// replyBatch, go in one RespondAll once the subscription has nothing more
// pending, so that a session with several answers among them gets them in
// one write rather than one write each (a write was half of a gateway
// node's CPU under load: bench/hop.sh). NATS delivers to one subscription
// on one goroutine, so the batch (n.replies) is that goroutine's alone; it
// is never held while the subscription waits.
func (n *Node) onReply(msg *nats.Msg) {
	n.handleReply(msg)
	if len(n.replies) == 0 {
		return
	}
	// Pending counts msg itself until the handler returns (nats.go
	// accounts for a message after its callback): 1 is nothing more.
	if pending, _, err := msg.Sub.Pending(); err != nil || pending <= 1 || len(n.replies) >= replyBatch {
		n.gw.RespondAll(n.replies)
		clear(n.replies)
		n.replies = n.replies[:0]
	}
}

// replyBatch bounds the answers onReply holds for one RespondAll.
const replyBatch = 256

func (n *Node) handleReply(msg *nats.Msg) {
	id, ok := replyID(msg.Subject)
	if !ok {
		return
	}
	if id == 0 {
		n.onResponseBatch(msg)
		return
	}
	p := n.pend.take(id)
	if p == nil {
		return // late: settled already
	}
	if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" {
		n.settle(p, unavailable("no live node hosts the target (no responders on NATS)"))
		return
	}
	switch {
	case p.in != nil:
		n.cm.In(metrics.KindAnswer)
		var r egress.Response
		if !readResponse(msg.Data, &r, p.target.Service) {
			var m pb.Response
			if err := proto.Unmarshal(msg.Data, &m); err != nil {
				n.settle(p, codes.New(codes.HandlerFailed, "undecodable answer from node %s", p.node))
				return
			}
			r = egress.Response{Body: m.Body, Service: m.Service, Err: errOf(m.Err)}
		}
		if n.gw != nil {
			n.replies = append(n.replies, p.answer(&r, r.Err))
		}
	case p.call != nil:
		n.cm.In(metrics.KindReply)
		var r pb.Result
		if err := proto.Unmarshal(msg.Data, &r); err != nil {
			n.settle(p, codes.New(codes.HandlerFailed, "undecodable result from node %s", p.node))
			return
		}
		c, err := p.call, errOf(r.Err)
		if err != nil && (err.Code == codes.Busy || err.Code == codes.Unavailable) &&
			c.To.Room == luavm.CreateRoom && !p.repicked && n.repick(p, err.Code) {
			return // the next pick answers it
		}
		n.rt.Return(&luavm.Result{To: c.From, ID: c.ID, Gen: c.Gen, Values: r.Values, Err: err})
	case p.bind != nil:
		n.cm.In(metrics.KindControl)
		var r pb.BindReply
		if err := proto.Unmarshal(msg.Data, &r); err != nil {
			n.settle(p, unavailable("undecodable bind reply from node %s", p.node))
			return
		}
		if r.Err != nil {
			p.bind(egress.ClientRef{}, errOf(r.Err))
			return
		}
		p.bind(refOf(r.Ref), nil)
	}
}
