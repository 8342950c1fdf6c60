package ingress

import (
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// SPEC §5, the edge table, in its order:
//
//	check                                   failure                        effect
//	route_id is in the descriptor           client_rpc.route_not_found     drop, warn, count
//	direction is c2s or bidi                client_rpc.direction_rejected  drop, warn, count
//	requires_auth -> session has player_id  client_rpc.not_authenticated   drop, warn, count
//	action is drop                          client_rpc.dropped             drop, count
//	the session is within rate_limit        client_rpc.rate_limited        error frame (notify: drop, count); 10 s in a row closes
//	fewer than max_inflight in flight       client_rpc.busy                error frame (notify: drop, count)
//	the target's business lane has room     client_rpc.busy                error frame (notify: drop, count)
//
// Every frame but a heartbeat first takes a rate-limit token, dropped or
// not, and one that finds none fails at the rate_limit row whatever the
// rows above it would say; the other rows are judged in the table's order.

// Session is what admission needs of a session (*session.Session).
type Session interface {
	// TryAcquire takes a max_inflight slot; false when none is free.
	TryAcquire() bool
	// Release gives a slot back.
	Release()
}

// Verdict is what the edge decided about one frame.
type Verdict struct {
	// Code is "" for a frame delivered to its target, else why it was not.
	Code codes.Code
	// Message explains Code on an error frame.
	Message string
	// Answer says a request gets an error frame with Code (the limit
	// rows); without it the frame is only dropped (the descriptor rows,
	// and any notify).
	Answer bool
	// Warn says the drop is logged at warn (the first three rows), at most
	// once per session, reason and second.
	Warn bool
	// Limit is the shield_limits_hit_total label of a limit that bit, or "".
	Limit string
	// Flood says the session has been over the rate limit for 10 s in a
	// row: it is closed with the session.rate_limited notice.
	Flood bool
	// RetryAfter is when the frame's retry might pass the row that
	// refused it: for rate_limited the time until the bucket holds a
	// token, for busy BusyRetryAfter. The error frame carries it as
	// retry_after_ms only under session.retry_hints (docs/protocol.md §6).
	RetryAfter time.Duration
}

// BusyRetryAfter is a busy refusal's retry hint. Nothing tells how soon a
// slot or the lane frees (the handlers' run times are the game's), so it
// is a floor for the client's backoff, which adds jitter and grows, about
// one frame of a 10 Hz game.
const BusyRetryAfter = 100 * time.Millisecond

// Frame is what admission knows of one frame that arrived.
type Frame struct {
	Route  *descriptor.EdgeRoute // nil: not in the descriptor
	Notify bool
	// Authenticated is whether the session was bound to a player, from
	// the one snapshot of its binding the frame is judged and delivered
	// with.
	Authenticated bool
	// Bucket is the session's rate limit, nil when the frame already took
	// its token (a frame the gate held, whose token was taken on arrival)
	// or there is no limit.
	Bucket *Bucket
	Now    time.Time
	// Holding says the frame already holds a max_inflight slot (the gate
	// took it when the frame arrived).
	Holding bool
}

// Admit runs SPEC §5's table on f from session s, in order, and hands a
// frame that passes every row to deliver, which is the last row: it
// returns nil, or the target's refusal (busy for a full business lane,
// unavailable for a target with no running VM or no live host). The slot
// a refused frame held or took is given back. Admit is the gateway's only
// way into a service.
func Admit(f Frame, s Session, deliver func() *codes.Error) Verdict {
	if ok, flood := f.Bucket.Take(f.Now); !ok {
		if f.Holding {
			s.Release()
		}
		return Verdict{Code: codes.RateLimited, Message: "over the session's rate limit", Answer: !f.Notify,
			Limit: "rate_limit", Flood: flood, RetryAfter: f.Bucket.Wait()}
	}
	if code := checkRoute(f.Route, f.Authenticated); code != "" {
		if f.Holding {
			s.Release()
		}
		return Verdict{Code: code, Warn: code != codes.Dropped}
	}
	if !f.Holding && !s.TryAcquire() {
		return Verdict{Code: codes.Busy, Message: "too many requests in flight (session.max_inflight)", Answer: !f.Notify,
			Limit: "max_inflight", RetryAfter: BusyRetryAfter}
	}
	if err := deliver(); err != nil {
		s.Release()
		return Refused(err, f.Notify)
	}
	return Verdict{}
}

// Refused is the verdict of the table's last row failing: the target
// refused the frame with err (busy for a full business lane, unavailable).
// Admit judges the row as it delivers; a caller that hands frames over
// later (the gateway delivers the frames of one read together) judges it
// with Refused then, having given the frame's slot back.
func Refused(err *codes.Error, notify bool) Verdict {
	v := Verdict{Code: err.Code, Message: err.Message, Answer: !notify}
	if err.Code == codes.Busy {
		v.Limit, v.RetryAfter = "mailbox", BusyRetryAfter
	}
	return v
}

// checkRoute is the table's first four rows, the descriptor's, for a
// frame on route r (nil: not in the descriptor) from a session that is
// authenticated or not.
func checkRoute(r *descriptor.EdgeRoute, authenticated bool) codes.Code {
	switch {
	case r == nil:
		return codes.RouteNotFound
	case !r.Direction.FromClient():
		return codes.DirectionRejected
	case r.RequiresAuth && !authenticated:
		return codes.NotAuthenticated
	case r.Action == config.Drop:
		return codes.Dropped
	}
	return ""
}

// Hold is admission for a frame the gate holds back (see Gate): it takes
// the frame's rate-limit token and its max_inflight slot at once (SPEC §5:
// waiting frames count against max_inflight when they arrive, past it
// busy at once). The other rows are judged when the gate lets the frame
// go, by Admit with Holding set and no Bucket.
func Hold(f Frame, s Session) Verdict {
	if ok, flood := f.Bucket.Take(f.Now); !ok {
		return Verdict{Code: codes.RateLimited, Message: "over the session's rate limit", Answer: !f.Notify,
			Limit: "rate_limit", Flood: flood, RetryAfter: f.Bucket.Wait()}
	}
	if !s.TryAcquire() {
		return Verdict{Code: codes.Busy, Message: "too many requests in flight (session.max_inflight)", Answer: !f.Notify,
			Limit: "max_inflight", RetryAfter: BusyRetryAfter}
	}
	return Verdict{}
}
