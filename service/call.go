package service

import (
	"context"
	"sync"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/luavm"
)

// outside is the caller of a Call made from Go (the admin API's
// /admin/call): no actor has this name (actor names are identifiers), so
// its results come back to the runtime's waiting callers.
var outside = egress.ActorID{Service: "@outside"}

// outsideCalls are the Calls from Go waiting for their results.
type outsideCalls struct {
	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan *luavm.Result
}

// Call runs method of the service at to as a shield.call from a VM would
// (SPEC §8: the same addressing, hooks and client handlers refused, one
// JSON value per argument and per result), with budget as its deadline.
// It returns the method's results, or the error the caller of shield.call
// would get.
func (rt *Runtime) Call(ctx context.Context, to luavm.Address, method string, args [][]byte, budget time.Duration) ([][]byte, *codes.Error) {
	deadline := time.Now().Add(budget)
	ch := make(chan *luavm.Result, 1)
	oc := &rt.outside
	oc.mu.Lock()
	if oc.waiting == nil {
		oc.waiting = map[uint64]chan *luavm.Result{}
	}
	oc.next++
	id := oc.next
	oc.waiting[id] = ch
	oc.mu.Unlock()
	defer func() {
		oc.mu.Lock()
		delete(oc.waiting, id)
		oc.mu.Unlock()
	}()
	if err := rt.Route(&luavm.Call{From: outside, To: to, ID: id, Method: method, Args: args, Deadline: deadline}); err != nil {
		return nil, err
	}
	// The callee answers within the budget, a timeout included; the extra
	// second covers a result still on its way when the budget ends.
	wait, cancel := context.WithDeadline(ctx, deadline.Add(time.Second))
	defer cancel()
	select {
	case r := <-ch:
		return r.Values, r.Err
	case <-wait.Done():
		return nil, codes.New(codes.Timeout, "%s.%s did not answer within %v", to.Service, method, budget)
	}
}

// returnOutside hands r to the Call from Go waiting for it, if r is one's.
// A Result with a Reply answers a call another node made: it goes there,
// whoever made it.
func (rt *Runtime) returnOutside(r *luavm.Result) bool {
	if r.To != outside || r.Reply != "" {
		return false
	}
	oc := &rt.outside
	oc.mu.Lock()
	ch := oc.waiting[r.ID]
	oc.mu.Unlock()
	if ch != nil {
		select {
		case ch <- r:
		default: // one result per call; a second is not the callee's to send
		}
	}
	return true
}
