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

// frame runs SPEC §5 on one request or notify: the rate limit first (every
// frame but a heartbeat takes a token, whatever becomes of it), then the
// descriptor checks in the table's order, max_inflight, and the target's
// lane. The project's acceptance tests (TestFloodOneConnection) read SPEC
// §5's "before it the rate limit" this way: a frame over the limit is
// rate_limited whatever its route.
func (c *conn) frame(f *envelope.Frame, now time.Time) {
	// Resolve the route first (route_id wins; a legacy frame may name it
	// instead), so that every error frame, the edge's own included,
	// carries the route's id and name as the request's answer would.
	r := c.g.edge.Lookup(f.RouteID)
	if f.RouteID == 0 && f.Route != "" {
		r = c.g.edge.LookupName(f.Route)
	}
	if r != nil {
		f.RouteID, f.Route = r.ID, r.Name
	}
	ok, flood := c.bucket.Take(now)
	if !ok {
		c.g.m.LimitsHit.WithLabelValues("rate_limit").Inc()
		c.reject(f, codes.RateLimited, "over the session's rate limit", true)
		if flood {
			c.s.Close(session.RateLimited, &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionRateLimited),
				Message: "over the rate limit for 10 s in a row"})
		}
		return
	}
	// One snapshot of the binding for the whole frame: the auth check, the
	// ref the service sees and the target it goes to must agree even when
	// a bind moves the session meanwhile.
	b := c.s.Binding()
	if code := ingress.Check(r, b.PlayerID != ""); code != "" {
		c.reject(f, code, "", false)
		return
	}
	c.deliver(f, r, b, now)
}

// deliver runs the session's and the target's limits on a frame that
// passed the edge, and hands it to the target.
func (c *conn) deliver(f *envelope.Frame, r *descriptor.EdgeRoute, b session.Binding, now time.Time) {
	if c.s.Inflight.Load() >= int32(c.g.cfg.Session.MaxInflight) {
		c.g.m.LimitsHit.WithLabelValues("max_inflight").Inc()
		c.reject(f, codes.Busy, "too many requests in flight (session.max_inflight)", true)
		return
	}
	c.s.Inflight.Add(1)
	in := &ingress.ClientIngress{
		Client: ingress.ClientContext{
			Ref:        egress.ClientRef{SessionID: c.s.ID, Epoch: b.Epoch, PlayerID: b.PlayerID, Gateway: b.Gateway},
			Route:      r.Name,
			RouteID:    r.ID,
			RequestID:  f.RequestID,
			RemoteAddr: c.s.RemoteAddr,
		},
		Body:     f.Body,
		Codec:    c.l.bodyCodec,
		Unwrap:   c.l.unwrap,
		Received: now,
	}
	if f.Kind == envelope.Notify {
		in.Client.RequestID = 0
	}
	if err := c.g.svc.Deliver(b.Target, in); err != nil {
		c.s.Inflight.Add(-1)
		if err.Code == codes.Busy {
			c.g.m.LimitsHit.WithLabelValues("mailbox").Inc()
		}
		c.reject(f, err.Code, err.Message, true)
	}
}

// reject counts a frame that no service will see. With answer, a request
// gets an error frame (a notify never does); without, the frame is only
// dropped. SPEC §5 warns only for the descriptor checks that say "drop,
// warn, count" (route_not_found, direction_rejected, not_authenticated), at
// most once per session, reason and second; action drop and a notify over a
// limit are "drop, count".
func (c *conn) reject(f *envelope.Frame, code codes.Code, msg string, answer bool) {
	c.g.m.EdgeDropped.WithLabelValues(code.Reason()).Inc()
	if answer {
		if f.Kind == envelope.Request {
			e := &envelope.Frame{Kind: envelope.Error, RouteID: f.RouteID, RequestID: f.RequestID, Route: f.Route, Code: string(code), Message: msg}
			if !c.s.EnqueueAnswer(e) {
				c.slow()
			}
		}
		return // a notify over a limit: drop, count (SPEC §5), no warn
	}
	if code == codes.Dropped {
		return // action drop is the operator's choice: drop, count, no warn
	}
	if sec := time.Now().Unix(); c.warned[code] != sec {
		if c.warned == nil {
			c.warned = map[codes.Code]int64{} // most sessions never need it
		}
		c.warned[code] = sec
		b := c.s.Binding()
		// Never the body: it is the client's and may be anything.
		c.g.log.Warn("frame dropped at the edge", "session_id", c.s.ID, "player_id", b.PlayerID,
			"route_id", f.RouteID, "route", truncate(f.Route, 64), "reason", code.Reason())
	}
}

// slow closes a session whose queue cannot take an answer it is owed.
func (c *conn) slow() {
	c.g.m.LimitsHit.WithLabelValues("outbound_queue").Inc()
	c.s.Close(session.SlowConsumer, nil)
}
