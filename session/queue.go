package session

import (
	"sync"

	"github.com/shieldrpc/shield/envelope"
)

// itemKind is what a queued frame is, which decides the bound it counts
// against (SPEC §7: pushes are bounded by outbound_queue and
// outbound_queue_bytes; each request's one answer, notices and status
// frames always find room; a heartbeat echo finds room unless an earlier
// one waits).
type itemKind uint8

const (
	itemPush    itemKind = iota + 1 // a push: outbound_queue, outbound_queue_bytes
	itemAnswer                      // a service's answer: holds its request's in-flight slot
	itemRefusal                     // an edge error frame: at most max_inflight + outbound_queue wait
	itemEcho                        // a heartbeat echo: one at a time
	itemStatus                      // a status frame: always
)

// Item is one queued frame and what it counts against.
type Item struct {
	Frame *envelope.Frame
	kind  itemKind
	sent  bool // an answer whose slot Sending gave back
}

// Answer reports whether the item is a request's answer, queued by
// AnswersLater: its frame is its request's alone, which the
// writer may reuse once it is written.
func (it Item) Answer() bool { return it.kind == itemAnswer }

// queue is a session's outbound queue: frames in the order they are to be
// written, and the counts of what they hold against the bounds. Producers
// (services' egress, the read loop, timers) never block on it; the
// connection's writer takes everything queued at once, and a frame counts
// against its bound until the writer says it was written (done), so that a
// batch stuck in a write to a client that does not read still fills the
// queue. It outlives a connection: a suspended session keeps queueing
// (SPEC §4 Resume).
//
// A put wakes the connection the session is attached to (wake, its
// Attachment's): the connection has no goroutine waiting for frames, it
// writes when woken (gateway/write.go). A suspended session has no one to
// wake.
type queue struct {
	mu        sync.Mutex // guards everything below
	items     []Item
	pushes    int  // itemPush entries
	pushBytes int  // their body bytes
	refusals  int  // itemRefusal entries
	echo      bool // an itemEcho entry is queued
	limits    Limits
	wake      Waker // the attached connection's waker; nil while suspended
}

// Waker wakes a connection to write what its session queued. soon says the
// frame may wait a moment for a goroutine of the connection's own (a push:
// the pushes queued while it starts share its write, as a fan-out's do);
// otherwise the caller may write it at once (an answer, which the service
// hands over with the others of its step).
type Waker func(soon bool)

func (q *queue) init(l Limits) { q.limits = l }

// setWake makes w the queue's waker and reports whether anything is queued.
func (q *queue) setWake(w Waker) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wake = w
	return len(q.items) > 0
}

// waker returns the queue's waker, or nil.
func (q *queue) waker() Waker {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.wake
}

// put queues f as kind, unless the kind's bound is reached, and wakes the
// connection.
func (q *queue) put(f *envelope.Frame, kind itemKind) bool {
	q.mu.Lock()
	switch kind {
	case itemPush:
		if q.pushes >= q.limits.Outbound || q.pushBytes+len(f.Body) > q.limits.OutboundBytes {
			q.mu.Unlock()
			return false
		}
		q.pushes++
		q.pushBytes += len(f.Body)
	case itemRefusal:
		if q.refusals >= q.limits.MaxInflight+q.limits.Outbound {
			q.mu.Unlock()
			return false
		}
		q.refusals++
	case itemEcho:
		if q.echo {
			q.mu.Unlock()
			return false
		}
		q.echo = true
	}
	q.items = append(q.items, Item{Frame: f, kind: kind})
	wake := q.wake
	q.mu.Unlock()
	if wake != nil {
		wake(kind == itemPush)
	}
	return true
}

// putAnswers queues answers, in order, under one lock, without waking
// the connection (Session.AnswersLater).
func (q *queue) putAnswers(fs []*envelope.Frame) {
	q.mu.Lock()
	for _, f := range fs {
		q.items = append(q.items, Item{Frame: f, kind: itemAnswer})
	}
	q.mu.Unlock()
}

// putFirst queues f ahead of everything else (the session.resumed status
// that a resumed connection must see first).
func (q *queue) putFirst(f *envelope.Frame) {
	q.mu.Lock()
	q.items = append(q.items, Item{})
	copy(q.items[1:], q.items)
	q.items[0] = Item{Frame: f, kind: itemStatus}
	wake := q.wake
	q.mu.Unlock()
	if wake != nil {
		wake(false)
	}
}

// requeue puts items taken by take back at the head, in order; they were
// never done, so they still count.
func (q *queue) requeue(items []Item) {
	if len(items) == 0 {
		return
	}
	q.mu.Lock()
	q.items = append(append(make([]Item, 0, len(items)+len(q.items)), items...), q.items...)
	for _, it := range items {
		if it.kind == itemEcho {
			q.echo = true
		}
	}
	wake := q.wake
	q.mu.Unlock()
	if wake != nil {
		wake(false)
	}
}

// take appends every queued item to batch and empties the queue; what was
// taken counts against the bounds until done, except a heartbeat echo:
// once taken it is no longer waiting (SPEC §7), so that the client's next
// heartbeat, which may arrive as soon as the echo is written, and before
// done, finds room.
func (q *queue) take(batch []Item) []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch = append(batch, q.items...)
	q.echo = false
	clear(q.items)
	if cap(q.items) > 64 {
		q.items = nil // a burst should not pin its backing array on an idle session
	} else {
		q.items = q.items[:0]
	}
	return batch
}

// done stops counting items that take gave out: they were written, or
// dropped with their connection.
func (q *queue) done(items []Item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range items {
		switch it.kind {
		case itemPush:
			q.pushes--
			q.pushBytes -= len(it.Frame.Body)
		case itemRefusal:
			q.refusals--
		}
	}
}

// len is the number of queued items.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
