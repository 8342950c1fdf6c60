// Package egress holds what flows from services back to clients: the answer
// to a request, a push to one or many sessions, and the session operations a
// service may ask for (bind, kick), plus Gateway, the interface the gateway
// implements to receive them and check them (SPEC §4 and §7).
//
// Every type here is plain data (no channels, no pointers into live
// objects), so that a later step can carry it between nodes.
package egress

import (
	"time"

	"github.com/shieldrpc/shield/codes"
)

// ClientRef names one session at one epoch: plain data that a service may
// store, pass to another service and use later to push. The gateway accepts
// a push only while the ref's epoch and player are still the session's.
type ClientRef struct {
	SessionID uint64
	Epoch     uint64
	PlayerID  string // empty before bind
	Gateway   string
}

// ActorID names one VM of one service.
type ActorID struct {
	Service  string
	Instance int
}

// Response is the one answer to a client request: a body, or an error.
// It goes to the session that sent the request whatever its epoch is now,
// and is dropped only when that session is gone (SPEC §7).
type Response struct {
	SessionID uint64
	RouteID   uint32
	RequestID uint64
	Body      []byte
	Err       *codes.Error // set: an error frame instead of a response
	// Notify marks the end of a notify's handler: nothing is written, but
	// the session's max_inflight count goes down.
	Notify bool
	// For metrics: the service that answered, the route's name, and when
	// the gateway received the request.
	Service  string
	Route    string
	Received time.Time
}

// Push is one s2c (or bidi) frame for one or many sessions. The body is
// encoded once per body codec in use (Bodies, keyed like a listener's
// codec: "json", "raw", "protobuf/<listener>"), whatever the number of
// targets; each target gets the body of its session's codec.
type Push struct {
	RouteID uint32
	Bodies  map[string][]byte
	Targets []ClientRef
}

// BindRequest asks the gateway to move a session to a new target and
// player, by compare-and-set on Ref.Epoch (SPEC §4).
type BindRequest struct {
	Ref      ClientRef // the session and the epoch the caller saw
	PlayerID string
	Target   string  // the service to bind to
	Caller   ActorID // only the session's current target VM may bind it
}

// Gateway receives what services send towards clients. Every method is
// safe for concurrent use and never blocks on a client.
type Gateway interface {
	// Name is the gateway's node name, carried in every ClientRef.
	Name() string
	// Respond queues the answer to a request, or accounts for the end of
	// a notify.
	Respond(r *Response)
	// Push checks each target (SPEC §7's table, in order) and queues the
	// frame for those that pass. codes[i] is "" for an accepted target and
	// the rejection code otherwise; codes has len(p.Targets) entries.
	Push(p *Push) (codes []codes.Code)
	// Bind replaces the session's target and player and returns the new
	// ref, or fails with epoch_expired, not_target, player_online or
	// session_not_found.
	Bind(b *BindRequest) (ClientRef, error)
	// Kick closes the session with a session.kicked notice, if ref still
	// names its current epoch.
	Kick(ref ClientRef, reason string) error
}

// CheckRef runs SPEC §7's checks of a push target against the session it
// names, in order, after the route's direction (checked once per push):
// the gateway, the session, the epoch, the player. found reports whether
// the session exists; cur is its current ref. It returns "" when the ref
// is accepted so far (the queue is checked last, by the caller).
func CheckRef(ref ClientRef, gateway string, found bool, cur ClientRef) codes.Code {
	switch {
	case ref.Gateway != gateway:
		return codes.GatewayMismatch
	case !found:
		return codes.SessionNotFound
	case ref.Epoch != cur.Epoch:
		return codes.EpochExpired
	case ref.PlayerID != cur.PlayerID:
		return codes.PlayerMismatch
	}
	return ""
}
