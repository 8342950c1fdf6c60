package gateway

import (
	"strconv"
	"sync"
	"time"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
	"github.com/shieldrpc/shield/tracing"
)

// The gateway's spans (docs/tracing.md): a client frame's shield.request,
// from its read to its answer's write (a notify's: to its delivery), with
// shield.edge, the edge's verdict, and shield.write, the answer's wait for
// the socket. With tracing off (g.tr nil) nothing here runs: each site
// tests a nil *traced or g.tr.

// traced is one traced frame's spans. Its read loop starts it, and it ends
// on whichever goroutine answers or drops the frame; a request's waits in
// the gateway's traces between its delivery and its answer's write.
type traced struct {
	root     tracing.Span
	read     time.Time // the frame's read, the start of its spans
	edgeDone bool      // the edge span has ended (only the read loop, or admitHeld, sets it)

	// answered and code are set by traces.answered, under its shard's
	// lock: when the answer reached the gateway, and its outcome.
	answered time.Time
	code     string
}

// startTrace starts the spans of a request or notify read at now, a child
// of the client's traceparent if it sent a valid one; nil when tracing is
// off.
func (p *peer) startTrace(f *envelope.Frame, r routeOf, now time.Time) *traced {
	tr := p.g.tr
	if tr == nil {
		return nil
	}
	var parent tracing.Context
	if f.TraceParent != "" {
		parent, _ = tracing.ParseTraceParent(f.TraceParent) // invalid: a trace of our own (W3C)
	}
	name, id := "", f.RouteID
	if r != nil {
		name = r.Name
	}
	label := name
	if label == "" {
		label = strconv.FormatUint(uint64(id), 10)
	}
	return &traced{read: now, root: tr.Start(parent, "shield.request "+label, tracing.Server, now,
		tracing.String("shield.route", name), tracing.Int("shield.route_id", int(id)),
		tracing.Uint("shield.session_id", p.s.ID), tr.Node())}
}

// verdict ends the edge span with the edge's verdict, once.
func (t *traced) verdict(tr *tracing.Tracer, verdict string, at time.Time) {
	if t == nil || t.edgeDone {
		return
	}
	t.edgeDone = true
	out := "ok"
	if verdict != "admitted" {
		out = verdict
	}
	tr.Child(t.root.Context(), "shield.edge", tracing.Internal, t.read, tracing.String("shield.verdict", verdict)).End(out, at)
}

// admitted is the edge's yes: the frame goes to its target now, carrying
// the request span as its parent; a request waits in traces for its
// answer.
func (t *traced) admitted(p *peer, requestID uint64, playerID string, at time.Time) {
	if t == nil {
		return
	}
	t.verdict(p.g.tr, "admitted", at)
	if playerID != "" {
		t.root.Set(tracing.String("shield.player_id", playerID))
	}
	if requestID != 0 {
		p.g.traces.put(p.s.ID, requestID, t)
	}
}

// refused ends a frame no service will see (or whose target refused it):
// its edge span with reason, its request span with code.
func (t *traced) refused(p *peer, f *envelope.Frame, reason, code string) {
	if t == nil {
		return
	}
	now := time.Now()
	if f.Kind == envelope.Request {
		p.g.traces.remove(p.s.ID, f.RequestID, t)
	}
	t.verdict(p.g.tr, reason, now)
	t.root.End(code, now)
}

// delivered ends a notify's request span: its target has it.
func (t *traced) delivered(notify bool) {
	if t != nil && notify {
		t.root.End("ok", time.Now())
	}
}

// traces are the traced requests delivered and not yet answered on the
// wire, by session and request id, in shards by session id (a session's
// read loop, its answers and its writes each take one shard's lock).
type traces struct {
	shards [16]struct {
		mu sync.Mutex
		m  map[uint64]map[uint64]*traced
	}
}

func (ts *traces) shard(sid uint64) (*sync.Mutex, *map[uint64]map[uint64]*traced) {
	sh := &ts.shards[sid%uint64(len(ts.shards))]
	return &sh.mu, &sh.m
}

// put keeps t for request rid of session sid. A client that reuses the id
// of a request still in flight ends the earlier one's span unanswered
// (the answers go out; only one can be matched to a span).
func (ts *traces) put(sid, rid uint64, t *traced) {
	mu, m := ts.shard(sid)
	mu.Lock()
	if *m == nil {
		*m = map[uint64]map[uint64]*traced{}
	}
	s := (*m)[sid]
	if s == nil {
		s = map[uint64]*traced{}
		(*m)[sid] = s
	}
	old := s[rid]
	s[rid] = t
	mu.Unlock()
	if old != nil {
		old.root.End("request_id_reused", time.Now())
	}
}

// remove forgets t, if it is what rid holds.
func (ts *traces) remove(sid, rid uint64, t *traced) {
	mu, m := ts.shard(sid)
	mu.Lock()
	if s := (*m)[sid]; s != nil && s[rid] == t {
		delete(s, rid)
		if len(s) == 0 {
			delete(*m, sid)
		}
	}
	mu.Unlock()
}

// answered notes that request rid's answer, of outcome code, reached the
// gateway at at: the start of its write span.
func (ts *traces) answered(sid, rid uint64, code string, at time.Time) {
	mu, m := ts.shard(sid)
	mu.Lock()
	if t := (*m)[sid][rid]; t != nil && t.answered.IsZero() {
		t.answered, t.code = at, code
	}
	mu.Unlock()
}

// written ends the spans of the answers among items, just written to the
// socket at at.
func (ts *traces) written(tr *tracing.Tracer, sid uint64, items []session.Item, at time.Time) {
	mu, m := ts.shard(sid)
	var buf [8]*traced
	done := buf[:0]
	mu.Lock()
	if s := (*m)[sid]; s != nil {
		for _, it := range items {
			if !it.Answer() {
				continue
			}
			rid := it.Frame.RequestID
			if t := s[rid]; t != nil && !t.answered.IsZero() {
				delete(s, rid)
				done = append(done, t)
			}
		}
		if len(s) == 0 {
			delete(*m, sid)
		}
	}
	mu.Unlock()
	for _, t := range done {
		tr.Child(t.root.Context(), "shield.write", tracing.Internal, t.answered).End("ok", at)
		t.root.End(t.code, at)
	}
}

// closed ends the spans of a closed session's requests still unanswered
// on the wire.
func (ts *traces) closed(sid uint64) {
	mu, m := ts.shard(sid)
	mu.Lock()
	s := (*m)[sid]
	delete(*m, sid)
	mu.Unlock()
	now := time.Now()
	for _, t := range s {
		t.root.End("session_closed", now)
	}
}
