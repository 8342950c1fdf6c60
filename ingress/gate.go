package ingress

import (
	"sync"
	"sync/atomic"
)

// Gate is SPEC §5's one-at-a-time rule for a session without a player_id:
// a frame that arrives while an earlier request of the session is in its
// service (or its answer is not yet written) waits, in arrival order, and
// goes through the edge checks only once that answer has been sent, so
// that a client may send `login` and its first authenticated request in
// one write and have the second judged with the binding the login made.
// Heartbeats are never held.
//
// The read loop asks Enter for each frame; the write loop calls Release
// when a request's answer was written, which lets the frames waiting go,
// one at a time while the session is still unauthenticated, all of them
// once it is bound. T is what a held frame carries (the gateway's frame
// and its arrival time).
type Gate[T any] struct {
	mu       sync.Mutex // guards busy, draining and held
	busy     bool       // an unauthenticated request is in the service
	draining bool       // Answered is letting held frames go
	held     []T

	// shut (busy, draining or frames held) and claimed (busy) are the
	// state as Enter and Busy report it, written under mu with every
	// change (publish), so that the questions asked of every frame and
	// every answer take no lock: they report one instant's state, as they
	// did under the lock.
	shut, claimed atomic.Bool
}

// publish writes the state Enter and Busy read; mu is held.
func (g *Gate[T]) publish() {
	g.shut.Store(g.busy || g.draining || len(g.held) > 0)
	g.claimed.Store(g.busy)
}

// Enter decides for a frame that arrived: with hold false the caller
// admits it now (and, when it is a request of an unauthenticated session,
// must Claim the gate before delivering it); with hold true the caller
// has to Hold it (take its token and slot) and then Push it.
func (g *Gate[T]) Enter() (hold bool) {
	// Frames behind held ones wait too, authenticated or not, so that
	// none overtakes another.
	return g.shut.Load()
}

// Claim marks an unauthenticated request as entering its service, just
// before it is delivered: frames arriving from now on wait for its
// answer. It is called by whoever admits the request: the read loop, when
// Enter said the gate was free (only the read loop closes a free gate, so
// it still is), or Release's admit.
func (g *Gate[T]) Claim() {
	g.mu.Lock()
	g.busy = true
	g.publish()
	g.mu.Unlock()
}

// Push queues a frame Enter held back. It reports true when the gate
// opened meanwhile (the answer came between Enter and Push): the caller
// must then Release it, or the frame would wait for nothing.
func (g *Gate[T]) Push(v T) (release bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = append(g.held, v)
	g.publish()
	return !g.busy && !g.draining
}

// Release opens the gate: the request that claimed it was answered (its
// answer written) or refused before reaching its service. It lets held
// frames go through admit in arrival order until one of them claims the
// gate again (admit calls Claim(true) for an unauthenticated request it
// is about to deliver); frames arriving meanwhile queue behind. A Release
// while another is letting frames go only opens the gate for it.
func (g *Gate[T]) Release(admit func(T)) {
	g.mu.Lock()
	g.busy = false
	if g.draining {
		g.publish()
		g.mu.Unlock()
		return
	}
	g.draining = true
	g.publish()
	for len(g.held) > 0 && !g.busy {
		v := g.held[0]
		var zero T
		g.held[0] = zero
		g.held = g.held[1:] // shut stays: draining
		g.mu.Unlock()
		admit(v)
		g.mu.Lock()
	}
	if len(g.held) == 0 {
		g.held = nil
	}
	g.draining = false
	g.publish()
	g.mu.Unlock()
}

// Busy reports whether a request claimed the gate and is not answered yet.
func (g *Gate[T]) Busy() bool { return g.claimed.Load() }

// Drop forgets every held frame (the session closed); release is called
// for each, to give its slot back.
func (g *Gate[T]) Drop(release func(T)) {
	g.mu.Lock()
	held := g.held
	g.held = nil
	g.publish()
	g.mu.Unlock()
	for _, v := range held {
		release(v)
	}
}
