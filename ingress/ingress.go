// Package ingress holds what flows from the gateway into a service (SPEC
// §4 and §5): a client's request or notify as a typed ClientIngress
// carrying the trusted ClientContext, the session lifecycle messages a
// target hears (Bound, Suspended, Resumed, Disconnected), and Admit, the
// edge table of SPEC §5 in its order, with the rate limit and the
// one-at-a-time gate of an unauthenticated session.
//
// Every message type here is plain data, so that it can be carried
// between nodes.
package ingress

import (
	"sync"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/tracing"
)

// ClientContext is what the gateway vouches for about the sender of a frame.
// Nothing in it comes from the frame's body.
type ClientContext struct {
	Ref        egress.ClientRef // session, epoch at delivery, player, gateway
	Route      string           // the route's name, may be empty
	RouteID    uint32
	RequestID  uint64 // 0 for a notify
	RemoteAddr string
}

// ClientIngress is one client frame delivered to its session's target VM.
type ClientIngress struct {
	Client ClientContext
	// Body is the frame's own memory (envelope.Frame.Body), read-only from
	// now on: a forward_raw handler's string shares it (codec.DecodeRequest).
	Body []byte
	// Codec is the listener profile's body codec key ("json", "raw",
	// "protobuf/<listener>"); the VM decodes the body with it.
	Codec string
	// Unwrap asks the json codec for SPEC §3's tolerance: a header-route
	// envelope's body {"route":..,"payload":..} is unwrapped to payload.
	Unwrap bool
	// Received is when the gateway read the frame: the handler's budget
	// counts from it (SPEC §6), and so do the handler metrics.
	Received time.Time
	// Budget is the budget the client declared for this request, already
	// clamped (DeclaredBudget), or 0 when it declared none. The handler
	// gets the shorter of it and its handler_timeout (BudgetWithin).
	Budget time.Duration
	// Reply is opaque to services: in a cluster, where the node that
	// carried the frame wants its answer (a NATS reply subject); empty in
	// one process. Answer copies it.
	Reply string
	// Trace is the gateway's span of the request (docs/tracing.md), the
	// parent of the service's spans; zero when not traced.
	Trace tracing.Context
	// Enqueued is when the service's lane took a traced frame, the start
	// of its queue span; zero for a frame not traced.
	Enqueued time.Time
}

// ClientIngress values are reused: the gateway takes one for every client
// frame (NewClientIngress), and the VM that answers it gives it back
// (Release), so that a frame's trip through its service costs no
// allocation for it. They are taken on a read loop's goroutine and given
// back on an actor's, so a sync.Pool, whose Put keeps an object on the
// putter's P, moved every one of them between Ps: its Put cost more than
// the rest of the VM's bookkeeping for a message (2.8% of a forward_raw
// echo's CPU). Here they wait in small stacks, one per session id's shard:
// a value goes back to the stack its session takes from.
const (
	freeShards = 16 // session ids are random: the shards share the load
	freeDepth  = 64 // values a shard keeps; past that, the collector's
)

type freeShard struct {
	mu    sync.Mutex // guards items
	items []*ClientIngress
	_     [32]byte // a shard to a cache line (64 bytes)
}

var free [freeShards]freeShard

// NewClientIngress returns a zero ClientIngress for a frame of session,
// perhaps one a service gave back.
func NewClientIngress(session uint64) *ClientIngress {
	sh := &free[session%freeShards]
	sh.mu.Lock()
	if n := len(sh.items); n > 0 {
		in := sh.items[n-1]
		sh.items[n-1] = nil
		sh.items = sh.items[:n-1]
		sh.mu.Unlock()
		return in
	}
	sh.mu.Unlock()
	return new(ClientIngress)
}

// Release gives in back for reuse. Whoever a frame was delivered to calls
// it once the frame is answered (or its notify has ended) and nothing of
// in is used any more: the values it made from in (its answer, the body
// decoded, a client's copy of the ClientContext) share only immutable
// strings with it. A frame never delivered is simply dropped.
func (in *ClientIngress) Release() {
	sh := &free[in.Client.Ref.SessionID%freeShards]
	*in = ClientIngress{}
	sh.mu.Lock()
	if len(sh.items) < freeDepth {
		sh.items = append(sh.items, in)
	}
	sh.mu.Unlock()
}

// Notify reports whether the frame expects no answer.
func (in *ClientIngress) Notify() bool { return in.Client.RequestID == 0 }

// Answer is the one answer (or, for a notify, the outcome) of in, from
// service: a body, or err. Every producer of an answer (a handler, a
// decode failure, a stale frame, a dead VM) builds it here, so the
// pairing of answer and request is made in one place.
func (in *ClientIngress) Answer(service string, body []byte, err *codes.Error) *egress.Response {
	r := in.AnswerValue(service, body, err)
	return &r
}

// AnswerValue is Answer as a value, for a Sink that takes it so
// (egress.ValueSink).
func (in *ClientIngress) AnswerValue(service string, body []byte, err *codes.Error) egress.Response {
	c := &in.Client
	return egress.Response{SessionID: c.Ref.SessionID, RouteID: c.RouteID, RequestID: c.RequestID,
		Body: body, Err: err, Notify: in.Notify(), Service: service, Route: c.Route, Received: in.Received, Reply: in.Reply}
}

// The session lifecycle messages a target hears. They travel on the
// target's control lane and are never dropped.

// Bound tells the new target of a bind that the session is its own from
// Ref's epoch on: its client_bound hook runs before any frame of that
// epoch (SPEC §4).
type Bound struct {
	Ref        egress.ClientRef
	RemoteAddr string
	// FromRoom is the room that bound the session back to this target as
	// its member left (docs/rooms.md §5.1), and Left the leave reason:
	// client_bound's from. Both are empty for every other bind.
	FromRoom string
	Left     string
	// Return is the binding's return target (a bind into a room): where
	// the runtime sends the session back should the room be gone.
	Return egress.ActorID
}

// Suspended tells a session's target that its connection was lost and it
// waits for a resume (client_suspended, SPEC §4 Resume).
type Suspended struct {
	Ref        egress.ClientRef
	RemoteAddr string
}

// Resumed tells a session's target that a connection resumed it
// (client_resumed).
type Resumed struct {
	Ref        egress.ClientRef
	RemoteAddr string
}

// Disconnected tells a session's target that the session closed
// (client_disconnected). The gateway invalidated the ref's epoch before
// sending it.
type Disconnected struct {
	Ref    egress.ClientRef
	Reason string // closed, kicked, idle_timeout, protocol_error, write_failed, slow_consumer, rate_limited, draining, auth_timeout, gateway_lost
}
