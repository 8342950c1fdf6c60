package service

import (
	"sync"
	"sync/atomic"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
)

// controlQueue is the control lane: results, session lifecycle messages,
// hooks, reload steps and stop. It is unbounded because its messages must
// never be dropped (SPEC §4: a Disconnected is never dropped; a lost call
// reply would leave a caller waiting out its budget). Its producers are
// bounded by other means: replies by max_pending, session messages by the
// number of sessions.
type controlQueue struct {
	mu     sync.Mutex // guards items
	items  []any
	head   int
	signal chan struct{} // holds one token while items is non-empty
	// n counts the items, so that the actor's loop, which looks at the
	// control lane before every business message, finds it empty without
	// the lock.
	n atomic.Int64
}

func newControlQueue() *controlQueue {
	return &controlQueue{signal: make(chan struct{}, 1)}
}

func (q *controlQueue) push(m any) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.n.Add(1)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *controlQueue) pop() (any, bool) {
	if q.n.Load() == 0 {
		return nil, false // a push racing this is seen at the loop's next turn: it signals
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return nil, false
	}
	m := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	q.n.Add(-1)
	if q.head == len(q.items) {
		// Reuse the backing array once drained; drop it if a burst grew it.
		if cap(q.items) > 1024 {
			q.items = nil
		} else {
			q.items = q.items[:0]
		}
		q.head = 0
	}
	return m, true
}

// businessLane is the bounded lane: client frames and calls, at most
// limit of them waiting (the actor's mailbox, which a reload may change at
// once). A producer never blocks: a full lane refuses.
//
// The actor takes everything waiting in one go (pop), under one lock, and
// then hands the messages out one by one from taken, which is its own: a
// lock per message was 2% of a forward_raw echo's CPU, its cache line
// moving between the actor and the read loops that push. The messages in
// taken still count against limit until popped (inHand), so that the
// lane's bound and depth are what they were with a pop per lock.
type businessLane struct {
	mu     sync.Mutex // guards items and limit
	items  []business
	limit  int
	signal chan struct{} // holds one token while items is non-empty

	taken  []business // the actor's alone: taken[next:] wait their turn
	next   int
	inHand atomic.Int32 // len(taken) - next, for the producers' bound
}

func newBusinessLane(limit int) *businessLane {
	return &businessLane{limit: limit, signal: make(chan struct{}, 1)}
}

// push queues m unless limit messages wait already.
func (q *businessLane) push(m business) bool {
	q.mu.Lock()
	if q.waitingLocked() >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, m)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
	return true
}

// pushAll queues the messages of ms in order while there is room, and
// returns how many it queued: one hand-off (and one wake-up of the actor)
// for several messages.
func (q *businessLane) pushAll(ms []*ingress.ClientIngress) int {
	q.mu.Lock()
	n := min(len(ms), q.limit-q.waitingLocked())
	for _, m := range ms[:max(n, 0)] {
		q.items = append(q.items, m)
	}
	q.mu.Unlock()
	if n > 0 {
		select {
		case q.signal <- struct{}{}:
		default:
		}
	}
	return max(n, 0)
}

// waitingLocked is the number of messages waiting, the actor's taken ones
// included; the caller holds mu.
func (q *businessLane) waitingLocked() int { return len(q.items) + int(q.inHand.Load()) }

// pop takes the oldest message. Only the actor's goroutine calls it.
func (q *businessLane) pop() (business, bool) {
	if q.next == len(q.taken) && !q.take() {
		return nil, false
	}
	m := q.taken[q.next]
	q.taken[q.next] = nil
	q.next++
	q.inHand.Add(-1)
	return m, true
}

// take moves everything waiting into taken, whose spent backing array
// becomes the lane's: false when nothing waits.
func (q *businessLane) take() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return false
	}
	spent := q.taken[:0]
	if cap(spent) > 1024 {
		spent = nil // a burst grew it: let it go
	}
	q.taken, q.next = q.items, 0
	q.items = spent
	q.inHand.Store(int32(len(q.taken)))
	return true
}

// len is the number of messages waiting.
func (q *businessLane) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waitingLocked()
}

// setLimit changes the capacity; messages already waiting stay.
func (q *businessLane) setLimit(n int) {
	q.mu.Lock()
	q.limit = n
	q.mu.Unlock()
}

// Control messages that have no type of their own elsewhere.
type (
	// runHook asks the actor to run one of its VM's own hooks (init,
	// stop, draining) and report on done.
	runHook struct {
		name string
		done chan<- error
	}
	// quit ends the actor's loop: every live task fails with unavailable.
	quit struct{}
	// prepareSwap is a reload's first step in one actor (SPEC §12): stop
	// taking business messages, run the old VM's reload_save, start next
	// with reload_load (or init), and report on done; the actor then
	// waits for commitSwap or abortSwap.
	prepareSwap struct {
		next *luavm.VM
		done chan<- error
	}
	// commitSwap makes the prepared VM the actor's; the old one finishes
	// its runs and closes.
	commitSwap struct{ done chan<- struct{} }
	// abortSwap drops the prepared VM; the old one takes messages again.
	abortSwap struct{ done chan<- struct{} }
	// setLimits changes the actor's mailbox, handler_timeout and
	// max_pending at once (a reload).
	setLimits struct {
		mailbox, maxPending int
		handlerTimeout      int64          // nanoseconds
		schemas             *codec.Schemas // the kept VM's, with keep
		keep                bool           // the VM stays: it takes schemas
		done                chan<- struct{}
	}
)

// business is what the business lane carries: *ingress.ClientIngress or
// *luavm.Call.
type business = any

var (
	_ business = (*ingress.ClientIngress)(nil)
	_ business = (*luavm.Call)(nil)
)
