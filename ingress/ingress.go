// Package ingress holds what flows from the gateway into a service: a
// client's request or notify as a typed ClientIngress carrying the trusted
// ClientContext, and the Disconnected control message (SPEC §4 and §5).
//
// Every type here is plain data, so that a later step can carry it between
// nodes.
package ingress

import (
	"time"

	"github.com/shieldrpc/shield/egress"
)

// ClientContext is what the gateway vouches for about the sender of a frame.
// Nothing in it comes from the frame's body.
type ClientContext struct {
	Ref        egress.ClientRef // session, epoch, player, gateway
	Route      string           // the route's name, may be empty
	RouteID    uint32
	RequestID  uint64 // 0 for a notify
	RemoteAddr string
}

// ClientIngress is one client frame delivered to its session's target VM.
type ClientIngress struct {
	Client ClientContext
	Body   []byte
	// Codec is the listener profile's body codec name ("json", "raw",
	// "protobuf"); the VM decodes the body with it.
	Codec string
	// Unwrap asks the json codec for SPEC §3's tolerance: a header-route
	// envelope's body {"route":..,"payload":..} is unwrapped to payload.
	Unwrap bool
	// Received is when the gateway read the frame, for handler metrics.
	Received time.Time
}

// Notify reports whether the frame expects no answer.
func (c *ClientIngress) Notify() bool { return c.Client.RequestID == 0 }

// Disconnected tells a session's target that the session closed. It travels
// on the control lane and is never dropped.
type Disconnected struct {
	Ref    egress.ClientRef
	Reason string // closed, kicked, idle_timeout, protocol_error, write_failed, slow_consumer, rate_limited, draining
}
