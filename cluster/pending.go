package cluster

import (
	"sync"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
)

// A pending is something this node sent another node and owes an answer
// for: a client request (or notify) to a remote instance, a shield.call
// to one, or a bind at a remote gateway. Its reply arrives on
// <prefix>.reply.<this node>.<id>; whichever comes first of the reply, the
// no-responders status, the death of the node it went to, a NATS
// disconnect and its deadline settles it, exactly once: the others find
// nothing and are dropped (SPEC §10: a late answer is dropped).
type pending struct {
	node     string         // the node it went to
	target   egress.ActorID // a client frame's target instance
	deadline time.Time      // settled with a timeout past this

	in   *ingress.ClientIngress // a client frame
	call *luavm.Call            // a shield.call
	bind egress.BindDone        // a bind
	// repicked: a room create sent to its second pick, which is not
	// passed on again when that one is full too (rooms.go repick).
	repicked bool
	// batch is an IngressBatch's items (batch.go): what its reply
	// subject's no-responders status fails; left is how many of them are
	// still pending (the batch goes with the last). An item's parent is
	// its batch's id. Both are the table's, under its lock.
	batch  []uint64
	left   int
	parent uint64
}

// pendingTable holds what is in flight to other nodes, by id.
type pendingTable struct {
	mu     sync.Mutex // guards next, byID
	next   uint64
	byID   map[uint64]*pending
	closed bool // after close: nothing more is taken
}

func newPendingTable() *pendingTable { return &pendingTable{byID: map[uint64]*pending{}} }

// add registers p and returns its id, or false once the table is closed.
func (t *pendingTable) add(p *pending) (uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, false
	}
	t.next++
	t.byID[t.next] = p
	return t.next, true
}

// reserve sets aside n+1 ids for an IngressBatch: the batch's, returned,
// and its items', the n after it. The message is written with them
// before addBatch registers anything (batch.go).
func (t *pendingTable) reserve(n int) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	bid := t.next + 1
	t.next += uint64(n) + 1
	return bid
}

// addBatch registers the items of one IngressBatch, under the ids reserve
// gave (bid+1 on), and the batch itself (which holds their ids), under
// one lock; it returns the items' ids in their order, or false once the
// table is closed.
func (t *pendingTable) addBatch(bid uint64, items []*pending, batch *pending) ([]uint64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false
	}
	ids := make([]uint64, len(items))
	for i, p := range items {
		ids[i] = bid + 1 + uint64(i)
		p.parent = bid
		t.byID[ids[i]] = p
	}
	batch.batch, batch.left = ids, len(ids)
	t.byID[bid] = batch
	return ids, true
}

// drop removes p, of id; the last item of a batch takes the batch with it.
// t.mu is held.
func (t *pendingTable) drop(id uint64, p *pending) {
	delete(t.byID, id)
	if p.parent == 0 {
		return
	}
	if b := t.byID[p.parent]; b != nil {
		if b.left--; b.left == 0 {
			delete(t.byID, p.parent)
		}
	}
}

// take removes and returns the pending of id, or nil when it was settled
// already.
func (t *pendingTable) take(id uint64) *pending {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[id]
	if p != nil {
		t.drop(id, p)
	}
	return p
}

// takeIf removes and returns every pending for which match holds.
func (t *pendingTable) takeIf(match func(*pending) bool) []*pending {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*pending
	for id, p := range t.byID {
		if match(p) {
			out = append(out, p)
			t.drop(id, p)
		}
	}
	return out
}

// close takes every pending left and refuses new ones.
func (t *pendingTable) close() []*pending {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return t.takeIf(func(*pending) bool { return true })
}

// Len is the number in flight.
func (t *pendingTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// settle gives p its one outcome when no reply will come: err for each
// kind (a client frame's answer, a call's result, a bind's outcome).
func (n *Node) settle(p *pending, err *codes.Error) {
	switch {
	case p.in != nil:
		n.answer(p, &egress.Response{}, err)
	case p.call != nil:
		c := p.call
		n.rt.Return(&luavm.Result{To: c.From, ID: c.ID, Gen: c.Gen, Err: err})
	case p.bind != nil:
		p.bind(egress.ClientRef{}, err)
	case p.batch != nil:
		n.settleBatch(p, err)
	}
}

// answer hands the local gateway the answer of a client frame it sent to
// another node: body and service from r, or err.
func (n *Node) answer(p *pending, r *egress.Response, err *codes.Error) {
	if n.gw == nil {
		return
	}
	n.gw.Respond(p.answer(r, err))
}

// answer is the gateway's Response to p's client frame: body and service
// from r, or err.
func (p *pending) answer(r *egress.Response, err *codes.Error) *egress.Response {
	body := r.Body
	if err != nil {
		body = nil
	}
	return p.in.Answer(cmpOr(r.Service, p.target.Service), body, err)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
