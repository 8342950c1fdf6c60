package egress

import (
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/envelope"
)

// Session is what the egress checks need of the session a ref names.
// *session.Session implements it.
type Session interface {
	// Current returns the session's ref (its binding's epoch, player and
	// gateway), and false once it has closed.
	Current() (ClientRef, bool)
	// Fits reports whether f, encoded with the session's envelope, is no
	// longer than its listener's max_frame_bytes.
	Fits(f *envelope.Frame) bool
	// Offer queues a push for the client unless the session's outbound
	// queue is full (outbound_queue frames or outbound_queue_bytes) or the
	// session has closed.
	Offer(f *envelope.Frame) bool
}

// Ref is what the ref rows need of a session: its current ref.
type Ref interface {
	Current() (ClientRef, bool)
}

// CheckRef runs SPEC §7's rows about the ref itself, in order (a kick
// needs no more): ref must name this gateway (gateway) and a session that
// exists (s, nil when there is none) and is open, at its epoch and with
// its player.
func CheckRef(ref ClientRef, gateway string, s Ref) codes.Code {
	if ref.Gateway != gateway {
		return codes.GatewayMismatch
	}
	if s == nil {
		return codes.SessionNotFound
	}
	cur, open := s.Current()
	switch {
	case !open:
		return codes.SessionNotFound
	case ref.Epoch != cur.Epoch:
		return codes.EpochExpired
	case ref.PlayerID != cur.PlayerID:
		return codes.PlayerMismatch
	}
	return ""
}

// CheckRoute is the first row of SPEC §7: pushes only on s2c and bidi
// routes (r is nil for a route the descriptor does not have). It is judged
// once per push, whatever the number of targets.
func CheckRoute(r *descriptor.EdgeRoute) codes.Code {
	if r == nil || !r.Direction.ToClient() {
		return codes.DirectionRejected
	}
	return ""
}

// Check runs the rest of SPEC §7's table, in its order, for one target of
// a push that passed CheckRoute: CheckRef's rows, then the frame f must
// fit the session's listener, and the session's outbound queue must have
// room, in which case f is queued. It returns "" for an accepted target,
// or the code of the first row that failed. In a cluster the rows after
// the gateway's run at the gateway the ref names.
func Check(ref ClientRef, gateway string, s Session, f *envelope.Frame) codes.Code {
	if code := CheckRef(ref, gateway, s); code != "" {
		return code
	}
	switch {
	case !s.Fits(f):
		return codes.ResourceExhausted
	case !s.Offer(f):
		if _, open := s.Current(); !open {
			// It closed after the check: it no longer exists for SPEC
			// §7, and its queue was not the reason.
			return codes.SessionNotFound
		}
		return codes.QueueFull
	}
	return ""
}
