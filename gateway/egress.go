package gateway

import (
	"strconv"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// Respond queues a request's one answer to the session that sent it,
// whatever its epoch is now; it is dropped only when the session is gone.
func (g *Gateway) Respond(r *egress.Response) {
	code := "ok"
	if r.Err != nil {
		code = string(r.Err.Code)
	}
	// The descriptor is the authority on a route's name: an answer that
	// does not carry it (a dead VM's unavailable) is still labelled by
	// name, as SPEC §9 asks, and the legacy envelopes carry it.
	er := g.edge.Lookup(r.RouteID)
	if !r.Notify {
		route := r.Route
		if route == "" && er != nil {
			route = er.Name
		}
		if route == "" {
			route = strconv.FormatUint(uint64(r.RouteID), 10)
		}
		g.m.Request(r.Service, route, code, time.Since(r.Received))
	}
	s := g.sessions.Get(r.SessionID)
	if s == nil {
		if !r.Notify {
			g.m.DroppedResponses.Inc()
		}
		return
	}
	s.Inflight.Add(-1)
	if r.Notify {
		return
	}
	f := &envelope.Frame{Kind: envelope.Response, RouteID: r.RouteID, RequestID: r.RequestID, Body: r.Body}
	if r.Err != nil {
		f = &envelope.Frame{Kind: envelope.Error, RouteID: r.RouteID, RequestID: r.RequestID, Code: string(r.Err.Code), Message: r.Err.Message}
	}
	if er != nil {
		f.Route = er.Name // the legacy envelopes carry it
	}
	if !s.EnqueueAnswer(f) {
		if closed, _ := s.Closed(); !closed {
			g.m.LimitsHit.WithLabelValues("outbound_queue").Inc()
			s.Close(session.SlowConsumer, nil)
		}
	}
}

// Push runs SPEC §7's checks for each target and queues one shared frame
// to those that pass.
func (g *Gateway) Push(p *egress.Push) []codes.Code {
	out := make([]codes.Code, len(p.Targets))
	r := g.edge.Lookup(p.RouteID)
	if r == nil || !r.Direction.ToClient() {
		for i := range out {
			out[i] = codes.DirectionRejected
		}
		g.m.EgressRejected.WithLabelValues(codes.DirectionRejected.Reason()).Add(float64(len(out)))
		return out
	}
	// One shared frame per codec, built when a target first needs it.
	frames := make(map[string]*envelope.Frame, len(p.Bodies))
	for i, ref := range p.Targets {
		s, b, code := g.check(ref)
		var f *envelope.Frame
		if code == "" {
			key := g.codecKeys[b.Profile]
			if f = frames[key]; f == nil {
				if body, ok := p.Bodies[key]; ok {
					f = &envelope.Frame{Kind: envelope.Push, RouteID: p.RouteID, Route: r.Name, Body: body}
					frames[key] = f
				} else {
					// The service's value has no encoding for this
					// session's codec (a table for a raw listener).
					code = codes.HandlerFailed
				}
			}
		}
		if code == "" && !s.Enqueue(f) {
			if closed, _ := s.Closed(); closed {
				// It closed after the check: it no longer exists for
				// SPEC §7, and its queue was not the reason.
				code = codes.SessionNotFound
			} else {
				code = codes.QueueFull
				g.m.LimitsHit.WithLabelValues("outbound_queue").Inc()
			}
		}
		if code != "" {
			out[i] = code
			g.m.EgressRejected.WithLabelValues(code.Reason()).Inc()
		}
	}
	return out
}

// check finds ref's session and checks ref against it, on one snapshot of
// the session (one lock per target of a broadcast, and the epoch and the
// player compared are those of one instant).
func (g *Gateway) check(ref egress.ClientRef) (*session.Session, session.Binding, codes.Code) {
	s := g.sessions.Get(ref.SessionID)
	var b session.Binding
	var cur egress.ClientRef
	found := false
	if s != nil {
		var closed bool
		if b, closed = s.Snapshot(); !closed {
			found = true
			cur = egress.ClientRef{SessionID: s.ID, Epoch: b.Epoch, PlayerID: b.PlayerID, Gateway: b.Gateway}
		}
	}
	return s, b, egress.CheckRef(ref, g.name, found, cur)
}

// Bind moves a session to a new target by compare-and-set on its epoch.
func (g *Gateway) Bind(b *egress.BindRequest) (egress.ClientRef, error) {
	if b.Ref.Gateway != g.name {
		return egress.ClientRef{}, codes.New(codes.GatewayMismatch, "the client is on gateway %q, not %q", b.Ref.Gateway, g.name)
	}
	return g.sessions.Bind(b, g.policy)
}

// Kick closes the session ref names, with a session.kicked notice, if ref
// still matches it.
func (g *Gateway) Kick(ref egress.ClientRef, reason string) error {
	s, _, code := g.check(ref)
	if code != "" {
		return codes.New(code, "cannot kick session %d", ref.SessionID)
	}
	s.Close(session.Kicked, session.KickNotice(reason))
	return nil
}
