package service

import (
	"sync"

	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
)

// controlQueue is the control lane: results, disconnects, hooks and stop.
// It is unbounded because its messages must never be dropped (SPEC §4: a
// Disconnected is never dropped; a lost call reply would leave a caller
// waiting out its budget). Its producers are bounded by other means: replies
// by max_pending, disconnects by the number of sessions.
type controlQueue struct {
	mu     sync.Mutex // guards items
	items  []any
	head   int
	signal chan struct{} // holds one token while items is non-empty
}

func newControlQueue() *controlQueue {
	return &controlQueue{signal: make(chan struct{}, 1)}
}

func (q *controlQueue) push(m any) {
	q.mu.Lock()
	q.items = append(q.items, m)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *controlQueue) pop() (any, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return nil, false
	}
	m := q.items[q.head]
	q.items[q.head] = nil
	q.head++
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

// Control messages that have no type of their own elsewhere.
type (
	// runHook asks the actor to run init or stop and report on done.
	runHook struct {
		name string
		done chan<- error
	}
	// quit ends the actor's loop: every live task fails with unavailable.
	quit struct{}
)

// business is what the business lane carries: *ingress.ClientIngress or
// *luavm.Call.
type business = any

var (
	_ business = (*ingress.ClientIngress)(nil)
	_ business = (*luavm.Call)(nil)
)
