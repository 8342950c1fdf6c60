package gateway

import (
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/session"
)

// Push runs SPEC §7's table (egress.CheckRoute, then egress.Check for each
// target) and queues one shared frame per body codec to the targets that
// pass; the gateway's push writers write them (writers.go).
func (g *Gateway) Push(p *egress.Push) []codes.Code {
	out := make([]codes.Code, len(p.Targets))
	r := g.edge.Load().Lookup(p.RouteID)
	if code := egress.CheckRoute(r); code != "" {
		for i := range out {
			out[i] = code
		}
		g.m.EgressRejected.WithLabelValues(code.Reason()).Add(float64(len(out)))
		return out
	}
	// One shared frame per codec, built when a target first needs it.
	frames := make(map[string]*envelope.Frame, len(p.Bodies))
	for i, ref := range p.Targets {
		var code codes.Code
		s := g.sessions.Get(ref.SessionID)
		var target egress.Session
		var f *envelope.Frame
		if s != nil {
			target = s
			key := s.Profile.CodecKey
			if f = frames[key]; f == nil {
				body, ok := p.Bodies[key]
				if !ok {
					// The service's value has no encoding for this
					// session's codec (a table for a raw listener).
					code = codes.HandlerFailed
				}
				f = &envelope.Frame{Kind: envelope.Push, RouteID: p.RouteID, Route: r.Name, Body: body, Binary: r.Binary}
				frames[key] = f
			}
		}
		if code == "" {
			code = egress.Check(ref, g.name, target, f)
		}
		if code == "" {
			continue
		}
		out[i] = code
		g.m.EgressRejected.WithLabelValues(code.Reason()).Inc()
		if code == codes.QueueFull {
			g.m.LimitsHit.WithLabelValues("outbound_queue").Inc()
			if s.Suspended() {
				// A suspended session's queue is all it has: one that
				// overflows ends (SPEC §4 Resume).
				s.Close(session.SlowConsumer, nil)
			}
		}
	}
	return out
}

// Bind moves a session to a new target by compare-and-set on its epoch
// (SPEC §4), and, with resume on, gives the session a new resume token
// (a suspended one keeps its own: session.Registry.RenewToken).
// The outcome is known at once on this gateway: done runs before Bind
// returns.
func (g *Gateway) Bind(b *egress.BindRequest, done egress.BindDone) {
	if b.Ref.Gateway != g.name {
		done(egress.ClientRef{}, codes.New(codes.GatewayMismatch, "the client is on gateway %q, not %q", b.Ref.Gateway, g.name))
		return
	}
	if g.svc.Crowded(b.Target) {
		// Its client_bound would wait behind a full control lane.
		g.m.LimitsHit.WithLabelValues("control_lane").Inc()
		done(egress.ClientRef{}, codes.New(codes.Busy, "service %s instance %d is overloaded: its control lane is full", b.Target.Service, b.Target.Instance))
		return
	}
	ref, err := g.sessions.Bind(b, g.policy)
	if err != nil {
		done(egress.ClientRef{}, err)
		return
	}
	if g.cfg.Session.ResumeWindow > 0 {
		if s := g.sessions.Get(ref.SessionID); s != nil {
			if tok := g.sessions.RenewToken(s, g.name); tok != "" {
				s.Status(&envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionResumeToken), Token: tok})
			}
		}
	}
	done(ref, nil)
}

// bound is the registry's Bound hook: the new target hears of the session
// (client_bound) before any frame of the new epoch can reach it.
// A room's bind back says which room the member left, and why.
func (g *Gateway) bound(s *session.Session, b session.Binding, req *egress.BindRequest) {
	m := &ingress.Bound{Ref: b.Ref(s.ID), RemoteAddr: s.RemoteAddr, Return: b.Return}
	if req.Caller.Room != "" && req.Caller != b.Target {
		m.FromRoom, m.Left = req.Caller.Room, req.Left
	}
	g.svc.Control(b.Target, m)
	if p, _ := s.Owner.(*peer); p != nil { // not peerOf: this runs under the session's lock
		p.stopAuthTimer() // a bound session has a player_id for good
	}
}

// published is the registry's Published hook: a bind's Then push (a
// room's END) is queued once the new epoch is what the read loop sees.
func (g *Gateway) published(s *session.Session, _ session.Binding, req *egress.BindRequest) {
	if req.Then != nil {
		g.pushThen(s, req.Then)
	}
}

// pushThen queues a bind's Then push for s, under the session's lock:
// SPEC §7's checks but the ref rows, which the bind's compare-and-set has
// just passed (and CheckRef would take the lock again).
func (g *Gateway) pushThen(s *session.Session, p *egress.Push) {
	r := g.edge.Load().Lookup(p.RouteID)
	code := egress.CheckRoute(r)
	if code == "" {
		body, ok := p.Bodies[s.Profile.CodecKey]
		f := &envelope.Frame{Kind: envelope.Push, RouteID: p.RouteID, Route: r.Name, Body: body, Binary: r.Binary}
		switch {
		case !ok:
			code = codes.HandlerFailed
		case !s.Fits(f):
			code = codes.ResourceExhausted
		case !s.Offer(f):
			code = codes.QueueFull
		}
	}
	if code != "" {
		g.m.EgressRejected.WithLabelValues(code.Reason()).Inc()
	}
}

// Kick closes the session ref names, with a session.kicked notice whose
// message is reason, if ref passes SPEC §7's ref rows.
func (g *Gateway) Kick(ref egress.ClientRef, reason string) *codes.Error {
	s := g.sessions.Get(ref.SessionID)
	var target egress.Ref
	if s != nil {
		target = s
	}
	if code := egress.CheckRef(ref, g.name, target); code != "" {
		return codes.New(code, "cannot kick session %d", ref.SessionID)
	}
	s.Close(session.Kicked, session.KickNotice(reason))
	return nil
}
