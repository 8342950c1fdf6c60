package session

import (
	"time"

	"github.com/shieldrpc/shield/envelope"
)

// The drain of one session (POST /admin/drain, docs/protocol.md §6): the
// session gets a heads-up, its new frames are refused with
// client_rpc.draining and a retry_after_ms hint while what it has in
// flight finishes, and it closes with reason draining when the grace
// ends. A drained session is never suspended: like the gateway's own
// drain (SPEC §4), a drain ends a suspended session at once.

// drainState is a draining session's end and hint.
type drainState struct {
	timer   *time.Timer // closes the session when the grace ends
	retryAt time.Time   // when the client may come back
}

// Drain begins draining s: heads (the gateway.drain_started status frame,
// nil when grace is 0) is queued, and when grace has passed s closes with
// reason Draining and the notice bye. retryAt is the hint RetryAfter
// counts down to. A suspended session, or a grace of 0, closes at once. It
// reports false when s is closed or draining already: a second drain does
// not move the first one's end.
func (s *Session) Drain(grace time.Duration, retryAt time.Time, heads, bye *envelope.Frame) bool {
	s.mu.Lock()
	if s.closed.Load() || s.drain != nil {
		s.mu.Unlock()
		return false
	}
	if s.suspended || grace <= 0 {
		s.mu.Unlock()
		s.Close(Draining, bye)
		return true
	}
	d := &drainState{retryAt: retryAt}
	d.timer = time.AfterFunc(grace, func() { s.Close(Draining, bye) })
	s.drain = d
	s.draining.Store(true)
	s.mu.Unlock()
	if heads != nil {
		s.Status(heads)
	}
	return true
}

// Draining reports whether an operator is draining s; the read loop asks
// it for every frame, without a lock.
func (s *Session) Draining() bool { return s.draining.Load() }

// RetryAfter is how long from now the client of a draining session is
// told to wait before it tries again: until the drain's retryAt, at
// least a millisecond, so that the hint is always there.
func (s *Session) RetryAfter(now time.Time) time.Duration {
	s.mu.Lock()
	d := s.drain
	s.mu.Unlock()
	if d == nil {
		return 0
	}
	return max(d.retryAt.Sub(now), time.Millisecond)
}

// stopDrainLocked stops the drain's timer when s closes first; mu is held.
func (s *Session) stopDrainLocked() {
	if s.drain != nil {
		s.drain.timer.Stop()
	}
}
