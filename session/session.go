// Package session holds the gateway's live sessions (SPEC §4): each
// session's single target binding with its epoch, its in-flight count, its
// bounded outbound queue, suspension and resume, its close, and the
// registry that finds sessions by id, by player and by resume token.
package session

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
)

// Reason is why a session closed: the reason its target's
// client_disconnected sees and shield_sessions_closed_total counts.
type Reason string

// The close reasons of SPEC §4 and §10.
const (
	Closed        Reason = "closed"
	Kicked        Reason = "kicked"
	IdleTimeout   Reason = "idle_timeout"
	ProtocolError Reason = "protocol_error"
	WriteFailed   Reason = "write_failed"
	SlowConsumer  Reason = "slow_consumer"
	RateLimited   Reason = "rate_limited"
	Draining      Reason = "draining"
	AuthTimeout   Reason = "auth_timeout"
	// TargetLost closes a session whose target's node died (SPEC §10): it
	// gets no Disconnected, since its target is gone.
	TargetLost Reason = "target_lost"
	// Replaced ends the fresh session of a connection whose first frame
	// resumed another: it was never anyone's, so nobody hears of it and it
	// is not counted as closed.
	Replaced Reason = "replaced"
)

// Resumable reports whether a bound session whose connection ended for r
// is suspended rather than closed, when resume is on (SPEC §4 Resume).
func (r Reason) Resumable() bool { return r == Closed || r == WriteFailed || r == IdleTimeout }

// Profile is a listener's wire profile, shared by its sessions: what the
// gateway needs to know to write to them.
type Profile struct {
	Listener      string
	Framer        envelope.Framer // encodes the gateway's frames
	MaxFrameBytes int             // no frame written is longer (SPEC §3, §7)
	CodecKey      string          // the body codec key pushes are picked by
}

// Binding is a session's one target: the VM its requests go to, the player
// it is logged in as, and the epoch that every ClientRef must match.
type Binding struct {
	Target   egress.ActorID
	PlayerID string // empty before bind
	Gateway  string
	Epoch    uint64
	// Return is where a room member goes back to (docs/rooms.md §5.1):
	// the VM that joined the session to the room Target. Empty when Target
	// is not a room.
	Return egress.ActorID
}

// Ref is the ClientRef of this binding of session id: the one place a
// ClientRef is made from a binding.
func (b Binding) Ref(id uint64) egress.ClientRef {
	return egress.ClientRef{SessionID: id, Epoch: b.Epoch, PlayerID: b.PlayerID, Gateway: b.Gateway}
}

// Limits are the per-session bounds of SPEC §2 and §5.
type Limits struct {
	MaxInflight   int // requests and notifies in the service or with an answer not yet written
	Outbound      int // pushes waiting to be written
	OutboundBytes int // bytes of pushes waiting to be written
}

// Hooks are what a session tells its owner (the gateway). Each runs at
// most once per event, on the goroutine that caused it, and must not
// block.
type Hooks struct {
	// Closed runs once, after the session closed and its epoch became
	// invalid, with the binding it had: the owner leaves the registry,
	// counts it and tells the target.
	Closed func(s *Session, b Binding, r Reason)
	// Answered runs when the writer is about to write a request's answer
	// (Sending; the pipelined-login gate opens then, SPEC §5).
	Answered func(s *Session)
}

// Session is one client's state shared by its connection's read and write
// loops and the services' egress. The connection itself is the gateway's.
type Session struct {
	ID          uint64
	RemoteAddr  string
	Profile     *Profile
	ConnectedAt time.Time // when its first connection was accepted
	// Owner is the state the session's maker keeps beside it (the
	// gateway's peer): set once, before the session is shared, so that
	// the maker finds it without a map of its own.
	Owner any

	mu sync.Mutex // guards binding's and closed's writes, reason, token, suspended, att, resumeWait, drain
	// binding is replaced, never changed, under mu: the read loop takes a
	// snapshot of it for every frame without the lock. A bind allocates
	// one (a session binds once or twice in its life).
	binding atomic.Pointer[Binding]
	// closed is written under mu, once, after reason: so Closed, which
	// every queued frame asks, reads both without the lock, and readers
	// holding mu see what they always saw.
	closed     atomic.Bool
	reason     Reason
	token      string      // the live resume token, "" when none
	suspended  bool        // waiting for a resume (kept true once closed)
	att        *Attachment // the connection's hold; nil while suspended
	resumeWait *resumeWait // the suspended session's timer
	drain      *drainState // an operator's drain, once begun (drain.go)

	// authed is binding.PlayerID != "", written under mu with it, so that
	// the read loop's question for every frame (which frame cap, SPEC §3)
	// takes no lock.
	authed   atomic.Bool
	draining atomic.Bool // drain != nil, for the read loop without the lock
	inflight atomic.Int32
	limits   Limits
	out      queue
	done     chan struct{} // closed by Close
	notice   *envelope.Frame
	hooks    Hooks
}

// New returns a session bound to target at epoch 1, attached to its first
// connection.
func New(id uint64, remote string, p *Profile, b Binding, l Limits, h Hooks) *Session {
	b.Epoch = 1
	s := &Session{ID: id, RemoteAddr: remote, Profile: p, ConnectedAt: time.Now(), limits: l, hooks: h,
		att: newAttachment(), done: make(chan struct{})}
	s.binding.Store(&b)
	s.authed.Store(b.PlayerID != "")
	s.out.init(l)
	return s
}

// Binding returns the current binding.
func (s *Session) Binding() Binding { return *s.binding.Load() }

// Ref is the ClientRef of the current binding.
func (s *Session) Ref() egress.ClientRef { return s.Binding().Ref(s.ID) }

// Current returns the current ref and whether the session is open, under
// one lock, so that a caller checking a ref sees both at one instant
// (egress.Session).
func (s *Session) Current() (egress.ClientRef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.binding.Load().Ref(s.ID), !s.closed.Load()
}

// Authenticated reports whether the session is bound to a player.
func (s *Session) Authenticated() bool { return s.authed.Load() }

// TryAcquire takes one of the session's max_inflight slots for a request
// or notify going to its service; false when all are taken (SPEC §5).
// Every concurrent producer goes through one compare-and-swap, so the
// limit is never passed.
func (s *Session) TryAcquire() bool {
	limit := int32(s.limits.MaxInflight)
	for {
		n := s.inflight.Load()
		if n >= limit {
			return false
		}
		if s.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives back a slot TryAcquire took: a notify's end, an answer
// written or dropped, a frame refused after it took one.
func (s *Session) Release() { s.inflight.Add(-1) }

// Inflight is the number of slots taken.
func (s *Session) Inflight() int { return int(s.inflight.Load()) }

// Fits reports whether f is no longer than the listener's max_frame_bytes
// once encoded (egress.Session).
func (s *Session) Fits(f *envelope.Frame) bool {
	return s.Profile.Framer.FrameSize(f) <= s.Profile.MaxFrameBytes
}

// Offer queues a push (egress.Session): false when the session closed or
// its queue holds outbound_queue pushes or outbound_queue_bytes of them.
// The frame is not copied: a push shares one frame among all its
// recipients, so nobody may modify a frame once queued.
func (s *Session) Offer(f *envelope.Frame) bool {
	if s.isClosed() {
		return false
	}
	return s.out.put(f, itemPush)
}

// AnswersLater queues the answers requests are owed, each holding the
// slot its request took until the writer is about to write it (Sending;
// SPEC §5: an answer not yet written counts): all of them or, when the
// session closed, none. It does not wake the connection: the caller
// queues a step's answers for the session under one lock of its queue,
// then calls Wake once, so that they go out in one write.
func (s *Session) AnswersLater(fs []*envelope.Frame) bool {
	if s.isClosed() {
		return false
	}
	s.out.putAnswers(fs)
	return true
}

// Wake wakes the connection the session is attached to, if any, to write
// what is queued.
func (s *Session) Wake() {
	if w := s.out.waker(); w != nil {
		w(false)
	}
}

// Refuse queues an error frame for a request the edge refused (busy,
// rate_limited), which holds no slot. At most max_inflight +
// outbound_queue of them wait at once (each a few dozen bytes): a client
// that sends without reading gets false, and is a slow consumer.
func (s *Session) Refuse(f *envelope.Frame) bool {
	if s.isClosed() {
		return false
	}
	return s.out.put(f, itemRefusal)
}

// Echo queues a heartbeat echo, unless an earlier echo is still waiting
// (SPEC §7): false then, and the caller counts the drop.
func (s *Session) Echo() bool {
	if s.isClosed() {
		return false
	}
	return s.out.put(heartbeat, itemEcho)
}

// Status queues a status frame (SPEC §3), which always finds room.
func (s *Session) Status(f *envelope.Frame) bool {
	if s.isClosed() {
		return false
	}
	return s.out.put(f, itemStatus)
}

var heartbeat = &envelope.Frame{Kind: envelope.Heartbeat}

// Take moves every queued frame into batch for the write loop, and
// returns it. The frames go on counting against the queue's bounds until
// Written, and the answers among them hold their max_inflight slots until
// Sending.
func (s *Session) Take(batch []Item) []Item {
	return s.out.take(batch)
}

// Sending tells the session that the writer is about to hand these frames
// of a batch from Take to the socket (they are encoded; what follows them
// in the batch is not yet): their answers give their max_inflight slots
// back now, before the write, since a client reading its answer must find
// its slot free (SPEC §5: until its answer is written a request counts),
// and the owner hears that answers went out (the Answered hook). Until
// then, an answer the writer holds (a batch stuck behind a client that
// does not read) keeps its slot, so that such a client cannot get more
// than max_inflight answers made for it. Sending an item twice is
// harmless.
func (s *Session) Sending(items []Item) {
	if n := markSent(items); n > 0 {
		s.inflight.Add(-n) // one atomic for the batch: the read loop takes slots on the same line
		if s.hooks.Answered != nil {
			s.hooks.Answered(s)
		}
	}
}

// markSent marks the answers among items that were not yet sent, and
// returns how many there were.
func markSent(items []Item) int32 {
	var n int32
	for i := range items {
		if items[i].kind == itemAnswer && !items[i].sent {
			items[i].sent = true
			n++
		}
	}
	return n
}

// Requeue puts frames Take gave out back at the head of the queue, in
// order: a batch whose connection lost the session before writing it, or
// the rest of a batch the socket would not take yet. They still count, and
// an answer keeps its slot until Sending (an item remembers whether it was
// sent, so one requeued after Sending is not given back twice).
func (s *Session) Requeue(batch []Item) { s.out.requeue(batch) }

// Written tells the session that the write loop wrote (or dropped) what
// Take gave it: those frames stop counting against the queue's bounds, and
// an answer dropped before Sending gives its slot back.
func (s *Session) Written(batch []Item) {
	if n := markSent(batch); n > 0 {
		s.inflight.Add(-n)
	}
	s.out.done(batch)
	clear(batch)
}

// Done is closed when the session closes.
func (s *Session) Done() <-chan struct{} { return s.done }

// Notice is the frame to write just before the connection closes, or nil.
// It is valid once Done is closed.
func (s *Session) Notice() *envelope.Frame { return s.notice }

// Closed reports whether the session has closed, and why.
func (s *Session) Closed() (bool, Reason) {
	if !s.closed.Load() {
		return false, ""
	}
	return true, s.reason // written before closed, and never again
}

func (s *Session) isClosed() bool { return s.closed.Load() }

// rebind is the compare-and-set's set, for Registry.Bind (which holds the
// registry's lock, so the epoch cannot have moved since it was compared).
// bound runs under the session's lock with the new binding, before it is
// published, so that what it queues for the new target (client_bound) is
// there before any frame of the new epoch can be delivered. It fails when the session closed
// meanwhile: a closed session's binding is the one its Closed hook already
// reported, and must stay so.
func (s *Session) rebind(target, ret egress.ActorID, playerID string, bound, published func(Binding)) (Binding, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return Binding{}, false
	}
	b := *s.binding.Load()
	b.Target, b.Return, b.PlayerID = target, ret, playerID
	b.Epoch++
	if bound != nil {
		bound(b) // before the binding is published: see above
	}
	s.authed.Store(playerID != "") // before the binding, as when both were read under the lock
	s.binding.Store(&b)
	if published != nil {
		published(b) // still under the lock: nothing of the old epoch is queued after it
	}
	return b, true
}

// Close closes the session once; the first reason wins. The epoch is
// invalidated first (no ref matches a closed session), then the Closed
// hook runs (it removes the session from the registry and tells the
// target), then Done closes and the connection is woken, so that it sends
// what is queued and notice, if any, and ends.
func (s *Session) Close(r Reason, notice *envelope.Frame) bool {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return false
	}
	s.reason = r
	s.closed.Store(true)
	b := *s.binding.Load()
	wait := s.resumeWait
	s.resumeWait = nil
	s.stopDrainLocked()
	s.mu.Unlock()
	if wait != nil {
		wait.timer.Stop()
	}
	if s.hooks.Closed != nil {
		s.hooks.Closed(s, b, r)
	}
	s.notice = notice
	close(s.done)
	s.Wake() // the connection writes what is queued and the notice, and ends
	return true
}
