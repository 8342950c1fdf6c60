package gateway

import (
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/session"
)

// routeOf is a frame's route in the descriptor's edge projection, nil when
// it has none.
type routeOf = *descriptor.EdgeRoute

// frame takes one request or notify through SPEC §5 (ingress.Admit): the
// gate of an unauthenticated session first, which may hold the frame back
// for the answer of an earlier request; then the edge table, whose last
// row hands it to the session's target, through out: the read loop's
// deliveries, which it hands over once the frames of its read are all
// judged (deliveries.flush).
func (p *peer) frame(f *envelope.Frame, now time.Time, bucket *ingress.Bucket, out *deliveries) {
	// Resolve the route first (route_id wins; a legacy frame may name it
	// instead), so that every error frame, the edge's own included,
	// carries the route's id and name as the request's answer would.
	edge := p.g.edge.Load() // one table for the whole frame, whatever a reload does
	r := edge.Lookup(f.RouteID)
	if f.RouteID == 0 && f.Route != "" {
		r = edge.LookupName(f.Route)
	}
	if r != nil {
		f.RouteID, f.Route = r.ID, r.Name
	}
	var t *traced // nil: not traced (tracing off costs this test)
	if p.g.tr != nil {
		t = p.startTrace(f, r, now)
	}
	if p.g.hold.Load() {
		p.refuse(f, ingress.Verdict{Code: codes.Unavailable, Answer: true,
			Message: "the node is not ready: its cluster start-up checks have not passed yet"}, t)
		return
	}
	if p.s.Draining() {
		// An operator drains the session: it takes nothing new, and what
		// it has in flight finishes (docs/protocol.md §6).
		p.refuse(f, ingress.Verdict{Code: codes.Draining, Message: "the session is draining; reconnect after retry_after_ms",
			Answer: true, RetryAfter: p.s.RetryAfter(now)}, t)
		return
	}
	if p.gate.Enter() {
		v := ingress.Hold(ingress.Frame{Route: r, Notify: f.Kind == envelope.Notify, Bucket: bucket, Now: now}, p.s)
		if v.Code != "" {
			p.refuse(f, v, t)
			return
		}
		if p.gate.Push(held{f: *f, route: r, at: now, t: t}) {
			p.gate.Release(p.admitHeld) // the gate opened before the frame was queued
		}
		return
	}
	p.admit(f, r, now, bucket, false, out, t)
}

// admitHeld admits a frame the gate held, now that it may go: delivered at
// once, on the goroutine whose answer opened the gate.
func (p *peer) admitHeld(h held) {
	if closed, _ := p.s.Closed(); closed {
		p.s.Release()
		h.t.refused(p, &h.f, "session_closed", "session_closed")
		return
	}
	p.admit(&h.f, h.route, h.at, nil, true, nil, h.t)
}

// admit runs the edge table on f against one snapshot of the binding: the
// auth check, the ref the service sees and the target it goes to agree
// even when a bind moves the session meanwhile. bucket is nil and holding
// true for a frame the gate held (its token and slot were taken on
// arrival). With out, the delivery waits in it (Admit's last row is then
// judged when out is flushed); without, it happens at once. t is the
// frame's spans, nil when it is not traced.
func (p *peer) admit(f *envelope.Frame, r routeOf, now time.Time, bucket *ingress.Bucket, holding bool, out *deliveries, t *traced) {
	s := p.s
	b := s.Binding()
	notify := f.Kind == envelope.Notify
	claimed := false
	v := ingress.Admit(ingress.Frame{Route: r, Notify: notify, Authenticated: b.PlayerID != "", Bucket: bucket,
		Now: now, Holding: holding}, s, func() *codes.Error {
		in := ingress.NewClientIngress(s.ID) // given back by the VM that answers it
		*in = ingress.ClientIngress{
			Client: ingress.ClientContext{
				Ref:        b.Ref(s.ID),
				Route:      r.Name,
				RouteID:    r.ID,
				RemoteAddr: s.RemoteAddr,
			},
			Body:     f.Body,
			Codec:    p.l.profile.CodecKey,
			Unwrap:   p.l.unwrap,
			Received: now,
			Budget:   ingress.DeclaredBudget(f.DeadlineMS),
		}
		if t != nil {
			in.Trace = t.root.Context()
			var rid uint64
			if !notify {
				rid = f.RequestID
			}
			t.admitted(p, rid, b.PlayerID, time.Now()) // before the service can answer
		}
		if !notify {
			in.Client.RequestID = f.RequestID
			if b.PlayerID == "" {
				// Until its answer is written, the session's next frames
				// wait (SPEC §5).
				p.gate.Claim()
				claimed = true
			}
		}
		if out != nil {
			out.add(delivery{p: p, target: b.Target, in: in, notify: notify, claimed: claimed, t: t})
			return nil
		}
		return p.g.svc.Deliver(b.Target, in)
	})
	if v.Code == "" {
		if out == nil {
			t.delivered(notify)
		}
		return
	}
	if claimed {
		p.gate.Release(p.admitHeld) // refused: no answer will open the gate
	}
	p.refuse(f, v, t)
}

// deliveries are the frames a read loop admitted since it last read: they
// go to their services together, once every frame of the read has been
// judged, so that each of them takes its max_inflight slot (and, before
// login, its place behind the gate) as it arrives, before the service
// could answer the first (SPEC §5: frames count when they arrive); and so
// that the services get a read's frames in one go.
type deliveries struct {
	items []delivery
	ins   []*ingress.ClientIngress // flush's scratch
}

// delivery is one admitted frame waiting in deliveries, with what its
// refusal needs besides the ingress (which has the frame's ids and route):
// its session, its kind, and whether it claimed the gate.
type delivery struct {
	p       *peer
	target  egress.ActorID
	in      *ingress.ClientIngress
	notify  bool
	claimed bool
	t       *traced // nil: not traced
}

func (d *deliveries) add(x delivery) { d.items = append(d.items, x) }

// flush delivers every frame waiting, in arrival order: each run of frames
// for one target in one hand-off when the services take them so
// (allDeliverer). A refusal (the target's lane full, no running VM) is
// Admit's last row failing: the frame's slot is given back, a gate it
// claimed opens, and the request gets its error frame.
func (d *deliveries) flush() {
	if len(d.items) == 0 {
		return
	}
	svc := d.items[0].p.g.svc // one read loop's: one gateway's
	all, batched := svc.(allDeliverer)
	for i := 0; i < len(d.items); {
		x := &d.items[i]
		if !batched {
			if err := svc.Deliver(x.target, x.in); err != nil {
				x.refused(err)
			} else {
				x.t.delivered(x.notify)
			}
			i++
			continue
		}
		j := i + 1
		for j < len(d.items) && d.items[j].target == x.target {
			j++
		}
		ins := d.ins[:0]
		for k := i; k < j; k++ {
			ins = append(ins, d.items[k].in)
		}
		n, err := all.DeliverAll(x.target, ins)
		for k := i; k < i+n; k++ {
			d.items[k].t.delivered(d.items[k].notify)
		}
		for k := i + n; k < j; k++ {
			d.items[k].refused(err)
		}
		clear(ins)
		d.ins = ins[:0]
		i = j
	}
	clear(d.items)
	d.items = d.items[:0]
	if cap(d.items) > 256 {
		d.items, d.ins = nil, nil // a burst should not pin its arrays on an idle session
	}
}

// refused undoes the admission of a frame its target refused.
func (x *delivery) refused(err *codes.Error) {
	c := &x.in.Client
	f := envelope.Frame{Kind: envelope.Request, RouteID: c.RouteID, RequestID: c.RequestID, Route: c.Route}
	if x.notify {
		f.Kind = envelope.Notify
	}
	x.in.Release() // never delivered: still the gateway's
	x.p.s.Release()
	v := ingress.Refused(err, x.notify)
	if x.claimed {
		x.p.gate.Release(x.p.admitHeld)
	}
	x.p.refuse(&f, v, x.t)
}

// allDeliverer is a Services that takes several frames for one target in
// one hand-off (*service.Runtime): it takes the first ones the target has
// room for and says how many, and why not the rest.
type allDeliverer interface {
	DeliverAll(target egress.ActorID, ins []*ingress.ClientIngress) (int, *codes.Error)
}

// answered is the session's Answered hook: a request's answer goes out,
// so the frames the gate held may go.
func (p *peer) answered(*session.Session) {
	if p.gate.Busy() {
		p.gate.Release(p.admitHeld)
	}
}

// refuse acts on a frame no service will see: it is counted; a request
// over a limit gets an error frame (a notify never does); a drop of the
// descriptor rows is logged at warn, at most once per session, reason and
// second (SPEC §5: "drop, warn, count"); a flood closes the session. Its
// spans, if traced (t), end with the verdict.
func (p *peer) refuse(f *envelope.Frame, v ingress.Verdict, t *traced) {
	g := p.g
	t.refused(p, f, v.Code.Reason(), string(v.Code))
	g.m.EdgeDropped.WithLabelValues(v.Code.Reason()).Inc()
	if v.Limit != "" {
		g.m.LimitsHit.WithLabelValues(v.Limit).Inc()
	}
	if v.Answer && f.Kind == envelope.Request {
		e := &envelope.Frame{Kind: envelope.Error, RouteID: f.RouteID, RequestID: f.RequestID, Route: f.Route,
			Code: string(v.Code), Message: v.Message}
		if v.Code == codes.Draining || g.cfg.Session.RetryHints {
			e.RetryAfterMS = retryMS(v.RetryAfter)
		}
		if !p.s.Refuse(e) {
			p.slowConsumer()
		}
	}
	if v.Flood {
		p.s.Close(session.RateLimited, rateLimitedNotice())
	}
	if v.Warn && p.warn(v.Code) {
		// Never the body: it is the client's and may be anything.
		g.log.Warn("frame dropped at the edge", "session_id", p.s.ID, "player_id", playerAttr(p.s.Binding().PlayerID),
			"route_id", f.RouteID, "route", truncate(f.Route, 64), "reason", v.Code.Reason())
	}
}

// warn reports whether a drop for code may be logged now: at most once
// per session, reason and second.
func (p *peer) warn(code codes.Code) bool {
	sec := time.Now().Unix()
	p.warnMu.Lock()
	defer p.warnMu.Unlock()
	if p.warned[code] == sec {
		return false
	}
	if p.warned == nil {
		p.warned = map[codes.Code]int64{} // most sessions never need it
	}
	p.warned[code] = sec
	return true
}

// slowConsumer closes a session whose queue cannot take a frame it is
// owed: the client neither reads nor keeps to its limits.
func (p *peer) slowConsumer() {
	if closed, _ := p.s.Closed(); closed {
		return
	}
	p.g.m.LimitsHit.WithLabelValues("outbound_queue").Inc()
	p.s.Close(session.SlowConsumer, nil)
}
