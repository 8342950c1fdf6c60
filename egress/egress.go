// Package egress holds what flows from services back to clients (SPEC §4
// and §7): the answer to a request, a push to one or many sessions, the
// session operations a service may ask for (bind, kick), Sink, the
// interface through which services send all of them, and Check, the
// egress table of SPEC §7 in its order.
//
// Every type here is plain data (no channels, no pointers into live
// objects), so that it can be carried between nodes.
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
	Gateway   string // the node name of the gateway holding the session
}

// ActorID names one VM of one service. A room (docs/rooms.md §3.1) is
// {Service: its kind, Instance: -1, Room: its id}; Room is empty for every
// other VM.
type ActorID struct {
	Service  string
	Instance int
	Room     string
}

// IsZero reports whether a is no actor at all (a binding's empty Return).
func (a ActorID) IsZero() bool { return a == ActorID{} }

// Response is the one answer to a client request: a body, or an error;
// or, for a notify, the record of how it ended (nothing is written). It
// goes to the session that sent the request whatever its epoch is now, and
// is dropped only when that session is gone (SPEC §7). Build it with
// ingress.ClientIngress.Answer, the one constructor every producer uses.
type Response struct {
	SessionID uint64
	RouteID   uint32
	RequestID uint64
	// Body is read-only: a forward_raw answer shares the memory of the
	// handler's Lua string (codec.EncodeResponse).
	Body []byte
	Err  *codes.Error // set: an error frame instead of a response
	// Notify marks a notify's end: nothing is written, but the session's
	// in-flight count goes down and the outcome is counted.
	Notify bool
	// For metrics: the service that answered, the route's name, and when
	// the gateway received the request.
	Service  string
	Route    string
	Received time.Time
	// Reply is the request's ingress.ClientIngress.Reply: in a cluster,
	// where the answer travels; empty in one process (the local gateway).
	Reply string
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

// SameBody is Push.Bodies for a body that is the same bytes under every
// codec key of keys: Shield's own room frames and events (docs/rooms.md
// §8.1), which no body codec encodes.
func SameBody(keys []string, body []byte) map[string][]byte {
	out := make(map[string][]byte, len(keys))
	for _, k := range keys {
		out[k] = body
	}
	return out
}

// BindRequest asks the gateway holding a session to move it to a new
// target and player, by compare-and-set on Ref.Epoch (SPEC §4). The
// caller resolves the target VM (fnv1a64(player_id) % instances), so the
// gateway needs to know nothing of services.
type BindRequest struct {
	Ref      ClientRef // the session and the epoch the caller saw
	PlayerID string
	Target   ActorID // the VM the session is bound to from now on
	Caller   ActorID // only the session's current target VM may bind it
	// Return is the binding's return target (docs/rooms.md §5.1): the VM
	// that joined the session to the room Target, which binds it back
	// there when it leaves. Empty for every other bind, and for the bind
	// back.
	Return ActorID
	// Left is the leave reason of a room's bind back (docs/rooms.md §5.2),
	// which the new target's client_bound reads as from.reason; empty for
	// every other bind.
	Left string
	// Then is a push for this session alone, queued by the gateway once
	// the new binding is what its read loop sees: a room's END (docs/rooms.md §5.2),
	// which must not reach the client before the epoch it answers to has
	// moved, or a call sent on END could still find the room. Its Targets
	// are ignored; nil for most binds; dropped with the bind if it fails.
	Then *Push
}

// BindDone receives a bind's outcome: the session's new ref, or the error
// (epoch_expired, not_target, player_online, session_not_found,
// gateway_mismatch, unavailable). It may run on any goroutine, before or
// after Bind returns, and must not block.
type BindDone func(ClientRef, *codes.Error)

// Sink receives what services send towards clients: the gateway in one
// process, the cluster transport across nodes. Every method is safe for
// concurrent use and never blocks on a client.
type Sink interface {
	// Respond queues the answer to a request, or accounts for the end of
	// a notify.
	Respond(r *Response)
	// Push runs SPEC §7's checks for each target and queues the frame for
	// those that pass. The result has one entry per target: "" for an
	// accepted one, the rejection code otherwise.
	Push(p *Push) []codes.Code
	// Bind asks for a rebind; done gets the outcome exactly once. Under
	// duplicate_login kick_old, the old session's Disconnected is queued
	// to its target before done runs.
	Bind(b *BindRequest, done BindDone)
	// Kick closes the session ref names with a session.kicked notice
	// whose message is reason, if ref passes SPEC §7's checks.
	Kick(ref ClientRef, reason string) *codes.Error
}

// BatchSink is a Sink that takes several answers at once (the gateway): it
// queues them all before it writes, so that the answers among them for one
// session go out in one write. A service runtime hands a Sink without it
// its answers one by one.
type BatchSink interface {
	Sink
	// RespondAll is Respond for each of rs, in order. It keeps none of
	// rs once it returns.
	RespondAll(rs []*Response)
}

// ValueSink is a Sink that also takes an answer by value: one whose caller
// builds the answer on its stack needs no allocation for it (a service
// actor, which holds its VM's answers until it hands them over).
type ValueSink interface {
	Sink
	// RespondValue is Respond(&r); the Sink keeps its own copy.
	RespondValue(r Response)
}
