package luavm

import (
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
)

// SPEC §4's stale frames, decided in the target from the epoch a frame
// carries, so that it holds wherever the gateway runs: when the VM would
// start a handler, a frame of a session that has closed does not run, and
// one whose session has been rebound since (its epoch moved on) gets
// client_rpc.epoch_expired. The VM learns both from its own messages: a
// Disconnected on its control lane (which overtakes the business lane, so
// it is seen before the frames queued behind it) and the success of a
// bind it made itself (only the current target can rebind a session).
//
// A mark is kept for the VM's handler_timeout: every frame read by the
// gateway before the mark has a budget that ends by then, and a frame
// whose budget has ended does not run anyway (it answers timeout). So the
// marks of a VM number at most the closes and rebinds of one budget.

// staleMark is what a VM knows of a session that left it.
type staleMark struct {
	epoch  uint64 // frames of this epoch or an earlier one are stale
	closed bool   // the session closed (else: it was rebound)
	until  time.Time
}

// staleSessions holds the marks, with their expiry order.
type staleSessions struct {
	marks map[uint64]staleMark
	order []staleEntry // by until, oldest first
}

type staleEntry struct {
	session uint64
	until   time.Time
}

// mark records that session left this VM at epoch (closed, or rebound
// away from it), for frames read before now.
func (s *staleSessions) mark(session, epoch uint64, closed bool, now time.Time, keep time.Duration) {
	if s.marks == nil {
		s.marks = map[uint64]staleMark{}
	}
	until := now.Add(keep)
	if old, ok := s.marks[session]; ok && old.epoch > epoch {
		epoch = old.epoch
	}
	s.marks[session] = staleMark{epoch: epoch, closed: closed, until: until}
	s.order = append(s.order, staleEntry{session, until})
	s.expire(now)
}

// check reports the code a frame of ref must answer with instead of
// running: session_not_found for a closed session, epoch_expired for a
// rebound one.
func (s *staleSessions) check(ref egress.ClientRef, now time.Time) (codes.Code, bool) {
	if len(s.marks) == 0 {
		return "", false
	}
	s.expire(now)
	m, ok := s.marks[ref.SessionID]
	if !ok || ref.Epoch > m.epoch {
		return "", false
	}
	if m.closed {
		return codes.SessionNotFound, true
	}
	return codes.EpochExpired, true
}

// expire drops the marks whose time is over.
func (s *staleSessions) expire(now time.Time) {
	n := 0
	for n < len(s.order) && !now.Before(s.order[n].until) {
		e := s.order[n]
		if m, ok := s.marks[e.session]; ok && !now.Before(m.until) {
			delete(s.marks, e.session)
		}
		n++
	}
	if n > 0 {
		s.order = append(s.order[:0], s.order[n:]...)
	}
}
