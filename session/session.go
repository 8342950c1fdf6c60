// Package session holds the gateway's live sessions: each session's single
// target binding with its epoch (SPEC §4), its bounded outbound queue, its
// close, and the table that finds sessions by id and by player.
package session

import (
	"sync"
	"sync/atomic"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
)

// Reason is why a session closed: the reason its target's
// client_disconnected sees and shield_sessions_closed_total counts.
type Reason string

// The close reasons of SPEC §4.
const (
	Closed        Reason = "closed"
	Kicked        Reason = "kicked"
	IdleTimeout   Reason = "idle_timeout"
	ProtocolError Reason = "protocol_error"
	WriteFailed   Reason = "write_failed"
	SlowConsumer  Reason = "slow_consumer"
	RateLimited   Reason = "rate_limited"
	Draining      Reason = "draining"
)

// Binding is a session's one target: the VM its requests go to, the player
// it is logged in as, and the epoch that every ClientRef must match.
type Binding struct {
	Target   egress.ActorID
	PlayerID string // empty before bind
	Gateway  string
	Profile  string // the listener the session came in on
	Epoch    uint64
}

// Session is one client connection's state shared between its read loop,
// its write loop and the services' egress. The connection itself belongs
// to the gateway.
type Session struct {
	ID         uint64
	RemoteAddr string

	mu      sync.Mutex // guards binding and closed
	binding Binding
	closed  bool
	reason  Reason

	// Inflight counts requests and notifies delivered to a service and not
	// yet finished (session.max_inflight).
	Inflight atomic.Int32

	out      chan *envelope.Frame // outbound_queue + the answers' reserve; frames are shared, read-only
	outbound int                  // session.outbound_queue: what frames nobody is owed may fill
	done     chan struct{}        // closed by Close
	notice   *envelope.Frame      // the last frame to write, set before done closes
	onClose  func(s *Session, b Binding, r Reason)
}

// New returns a session bound to its listener's entry VM at epoch 1, whose
// queue holds outbound frames (session.outbound_queue) plus a reserve of
// answers slots that only answers may use (the gateway gives it
// session.max_inflight). onClose runs once, after the session is closed and
// its epoch invalid.
func New(id uint64, remote string, b Binding, outbound, answers int, onClose func(*Session, Binding, Reason)) *Session {
	b.Epoch = 1
	return &Session{ID: id, RemoteAddr: remote, binding: b, out: make(chan *envelope.Frame, outbound+answers),
		outbound: outbound, done: make(chan struct{}), onClose: onClose}
}

// Binding returns the current binding.
func (s *Session) Binding() Binding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.binding
}

// Ref is the ClientRef of the current binding.
func (s *Session) Ref() egress.ClientRef {
	b := s.Binding()
	return egress.ClientRef{SessionID: s.ID, Epoch: b.Epoch, PlayerID: b.PlayerID, Gateway: b.Gateway}
}

// Enqueue queues a frame nobody is owed (a push, a heartbeat echo) for the
// write loop without ever blocking, and reports false when outbound_queue
// frames are already waiting or the session closed. The frame is not
// copied: a push shares one frame among all its recipients, so nobody may
// modify a frame once queued.
//
// The length check races with other producers, so the queue may pass
// outbound_queue by a frame per concurrent producer; the answers' reserve
// absorbs that.
func (s *Session) Enqueue(f *envelope.Frame) bool {
	if len(s.out) >= s.outbound {
		return false
	}
	return s.put(f)
}

// EnqueueAnswer queues the one answer a request is owed (a response or an
// error frame). Answers may also use the reserve, so that a client that
// reads, and keeps no more than max_inflight requests outstanding, never
// has an answer refused because pushes or a burst of answers filled the
// queue for a moment: a full queue is the write loop's to judge, by
// write_timeout. It reports false when even the reserve is full (the
// client neither reads nor respects its limits) or the session closed.
func (s *Session) EnqueueAnswer(f *envelope.Frame) bool { return s.put(f) }

func (s *Session) put(f *envelope.Frame) bool {
	select {
	case <-s.done:
		return false
	default:
	}
	select {
	case s.out <- f:
		return true
	default:
		return false
	}
}

// Out is the write loop's queue.
func (s *Session) Out() <-chan *envelope.Frame { return s.out }

// Done is closed when the session closes.
func (s *Session) Done() <-chan struct{} { return s.done }

// Notice is the frame to write just before the connection closes, or nil.
// It is valid once Done is closed.
func (s *Session) Notice() *envelope.Frame { return s.notice }

// Snapshot returns the current binding and whether the session has closed,
// under one lock, so that a caller checking a ref sees both at one instant.
func (s *Session) Snapshot() (b Binding, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.binding, s.closed
}

// Closed reports whether the session has closed, and why.
func (s *Session) Closed() (bool, Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed, s.reason
}

func (s *Session) isClosed() bool {
	closed, _ := s.Closed()
	return closed
}

// rebind is the compare-and-set's set, for Table.Bind (which holds the
// table's lock, so the epoch cannot have moved since it was compared). It
// fails when the session closed meanwhile: a closed session's binding is
// the one its onClose already reported, and must stay so.
func (s *Session) rebind(target egress.ActorID, playerID string) (Binding, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Binding{}, false
	}
	s.binding.Target = target
	s.binding.PlayerID = playerID
	s.binding.Epoch++
	return s.binding, true
}

// Close closes the session once; the first reason wins. The epoch is
// invalidated first (no ref matches a closed session), then onClose runs
// (it removes the session from its table and tells the target), then Done
// closes so the write loop sends notice, if any, and ends the connection.
func (s *Session) Close(r Reason, notice *envelope.Frame) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed, s.reason = true, r
	b := s.binding
	s.mu.Unlock()
	if s.onClose != nil {
		s.onClose(s, b, r)
	}
	s.notice = notice
	close(s.done)
	return true
}
