package gateway

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/session"
)

// Respond queues a request's one answer to the session that sent it,
// whatever its epoch is now; it is dropped only when the session is gone.
// A notify's outcome only gives its slot back. Both are counted in
// shield_requests_total.
func (g *Gateway) Respond(r *egress.Response) {
	var t metrics.Tally
	a := g.prepare(g.sessions.Get(r.SessionID), r, &t, time.Now())
	t.Flush(g.m) // counted before it can be written
	if s := g.queue([]prepared{a}); s != nil {
		s.Wake()
	}
}

var _ egress.BatchSink = (*Gateway)(nil)

// RespondAll queues every answer of rs, then wakes each session they are
// for once: a session's answers among them go out in one write (a
// service's actor hands over the answers of one step so). Their metrics
// are added up and counted together (metrics.Tally), before the first of
// them is queued: once queued, an answer may be written at once by
// whoever owns its session's write side, and a client that has an answer
// finds it counted. They are queued at one instant, which is the one time
// their handler latencies are measured to (a clock reading costs tens of
// nanoseconds here, and a step hands over dozens of answers).
func (g *Gateway) RespondAll(rs []*egress.Response) {
	var t metrics.Tally
	now := time.Now()
	var buf [32]prepared // a step's answers, mostly service.answerBatch at most
	as := buf[:0]
	var last *session.Session // the session of the answer before: a step's answers come in runs of one session
	for _, r := range rs {
		if last == nil || last.ID != r.SessionID {
			last = g.sessions.Get(r.SessionID)
		}
		as = append(as, g.prepare(last, r, &t, now))
	}
	t.Flush(g.m)
	var wake [16]*session.Session // most steps answer a few sessions
	woken := wake[:0]
next:
	for len(as) > 0 {
		n := 1
		for n < len(as) && as[n].s == as[0].s {
			n++
		}
		s := g.queue(as[:n])
		as = as[n:]
		if s == nil {
			continue
		}
		for _, w := range woken {
			if w == s {
				continue next
			}
		}
		woken = append(woken, s)
	}
	for _, s := range woken {
		s.Wake()
	}
}

// prepared is an answer prepared for its session (nil when gone): its
// frame made (nil for a notify, or a session gone) and its metrics
// tallied, not yet queued.
type prepared struct {
	s *session.Session
	r *egress.Response
	f *envelope.Frame
}

// prepare makes r's answer to s, its session as the registry had it, and
// tallies its metrics in t, its latency measured to now.
func (g *Gateway) prepare(s *session.Session, r *egress.Response, t *metrics.Tally, now time.Time) prepared {
	// The descriptor is the authority on a route's name: an answer that
	// does not carry it (a dead VM's unavailable) is still labelled by
	// name, as SPEC §9 asks, and the legacy envelopes carry it.
	route := r.Route
	if route == "" {
		if er := g.edge.Load().Lookup(r.RouteID); er != nil {
			route = er.Name
		}
	}
	var f *envelope.Frame
	if s != nil && !r.Notify {
		f = answerFrame(r, route)
		if !s.Fits(f) {
			f = tooLong(r, route, s.Profile.Framer, s.Profile.MaxFrameBytes)
		}
	}
	code := "ok"
	switch {
	case f != nil && f.Kind == envelope.Error:
		code = f.Code
	case r.Err != nil:
		code = string(r.Err.Code)
	}
	label := route
	if label == "" {
		label = strconv.FormatUint(uint64(r.RouteID), 10)
	}
	t.Add(g.m, r.Service, label, code, now.Sub(r.Received))
	if g.tr != nil && f != nil {
		g.traces.answered(s.ID, r.RequestID, code, now)
	}
	return prepared{s: s, r: r, f: f}
}

// queue queues a run of prepared answers for one session (nil when gone)
// without waking its connection, the answers under one lock of its queue,
// and returns the session to wake, or nil when nothing was queued. A
// notify's outcome only gives its slot back. A session that closed since
// it was looked up refuses the answers (AnswersLater), which are then
// dropped as they would be for a session gone.
func (g *Gateway) queue(run []prepared) *session.Session {
	s := run[0].s
	var buf [answerRun]*envelope.Frame
	fs := buf[:0]
	for _, a := range run {
		switch {
		case a.r.Notify:
			if s != nil {
				s.Release()
			}
		case s == nil:
			g.m.DroppedResponses.Inc()
		default:
			fs = append(fs, a.f)
		}
	}
	switch {
	case len(fs) == 0:
		return nil
	case !s.AnswersLater(fs):
		for range fs {
			s.Release() // the session closed meanwhile: nothing will write them
			g.m.DroppedResponses.Inc()
		}
		return nil
	}
	return s
}

// answerRun is the room for one session's answers of a step on the stack:
// a step holds service.answerBatch answers, and a longer run only costs
// an allocation.
const answerRun = 32

// answerFrame is the frame of answer r on route (its name, for the legacy
// envelopes), from answerFrames.
func answerFrame(r *egress.Response, route string) *envelope.Frame {
	f := answerFrames.Get().(*envelope.Frame)
	if r.Err != nil {
		*f = envelope.Frame{Kind: envelope.Error, RouteID: r.RouteID, RequestID: r.RequestID, Route: route,
			Code: string(r.Err.Code), Message: r.Err.Message}
		return f
	}
	*f = envelope.Frame{Kind: envelope.Response, RouteID: r.RouteID, RequestID: r.RequestID, Route: route, Body: r.Body}
	return f
}

// answerFrames holds the frames of answers: an answer's frame is its
// session's queue's alone, so once written (recycleAnswers) it serves the
// next answer, and an answer costs no allocation of its own.
var answerFrames = sync.Pool{New: func() any { return new(envelope.Frame) }}

// recycleAnswers gives back the frames of the answers in a batch just
// written, before the batch is handed back to its session (Written, which
// looks at the frames of pushes only).
func recycleAnswers(batch []session.Item) {
	for _, it := range batch {
		if it.Answer() {
			*it.Frame = envelope.Frame{}
			answerFrames.Put(it.Frame)
		}
	}
}

// tooLong replaces an answer longer than the listener's max_frame_bytes
// (SPEC §3, §7): a response becomes the error resource_exhausted, and an
// error frame's message is cut until the frame fits.
func tooLong(r *egress.Response, route string, fr envelope.Framer, max int) *envelope.Frame {
	f := &envelope.Frame{Kind: envelope.Error, RouteID: r.RouteID, RequestID: r.RequestID, Route: route,
		Code: string(codes.ResourceExhausted), Message: fmt.Sprintf("the response is longer than max_frame_bytes (%d)", max)}
	if r.Err != nil {
		f.Code, f.Message = string(r.Err.Code), r.Err.Message
	}
	for n := len(f.Message); n > 0 && fr.FrameSize(f) > max; n /= 2 {
		f.Message = f.Message[:n/2]
	}
	return f
}
