package gateway

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/session"
)

// A connection's life: serve makes a session for it (bound to its
// listener's entry service), runs the read loop on serve's goroutine, and
// ends the session when the read loop or a write fails, unless the
// session is suspended for a resume (SPEC §4) or was taken over by another
// connection. Writes happen when there is something to write, on the
// goroutine that queued it or on a write loop started for it (write.go).
// The first frame may be a resume, which swaps the fresh session for the
// one it names (resume.go).

// peer is the gateway's own state of one session, beside session.Session:
// what every connection of the session shares.
type peer struct {
	g    *Gateway
	s    *session.Session
	l    *listener
	gate ingress.Gate[held] // SPEC §5's one-at-a-time rule before login

	warnMu sync.Mutex           // guards warned
	warned map[codes.Code]int64 // last unix second a drop of that reason was logged

	// authTimer is session.auth_timeout's timer: nil when off, and once the
	// session is bound (dropped then, so that a logged-in session does not
	// keep it).
	authTimer atomic.Pointer[time.Timer]
}

// held is a frame the gate holds back, with its arrival time. It holds a
// copy, so that the read loop's frame, which most frames never leave,
// stays off the heap.
type held struct {
	f     envelope.Frame
	route routeOf
	at    time.Time
	t     *traced // nil: not traced
}

// conn is one client connection. Its read loop owns bucket and beats; the
// owner of its write side (write.go) is the only goroutine that writes
// frames to fc.
type conn struct {
	g      *Gateway
	l      *listener
	fc     frameConn
	p      *peer
	att    *session.Attachment
	bucket *ingress.Bucket // session.rate_limit
	beats  *ingress.Bucket // heartbeats echoed: 10 a second (SPEC §5); made at the first heartbeat
	over   int             // heartbeats over beats since the read loop last paused
	first  bool            // no frame read yet: it may be a resume
	// declared is the Deadline frame just read, which the next frame must
	// be the request of (docs/protocol.md "Deadlines"); zero when none.
	declared envelope.Frame
	out      deliveries // the frames admitted since the last read, for their services (read.go)

	endMu  sync.Mutex // guards ended, and the end's decision
	ended  bool
	parted *envelope.Frame // the notice owed on a connection whose session was suspended

	greeting *envelope.Frame // written first by the next write loop (session.resumed)
	slot     bool            // the connection holds its max_sessions slot

	// The write side (write.go): its state, and what its owner keeps.
	wstate atomic.Int32
	direct bool           // fc.Direct: the owner may write without the write loop
	batch  []session.Item // the owner's scratch
	writes sync.WaitGroup // one while the write side of this attachment has not ended (endWrites)

	// The read loop's clock and deadline, kept here rather than in its
	// frame so that they outlive a park (park.go): lastRead is when the
	// last read that brought frames returned, deadline the socket's read
	// deadline as last set.
	lastRead time.Time
	deadline time.Time
	resting  bool // parked since the last frame: the deadline is idle_timeout's

	park parkState   // guarded by the gateway's parker
	shut atomic.Bool // the write side closes the connection: it parks no more
}

// serve runs one connection, whatever its transport, until it closes. It
// holds one max_sessions slot (taken at accept), which it gives back or
// hands to its session when the session is suspended.
func (g *Gateway) serve(l *listener, fc frameConn) {
	c := &conn{g: g, l: l, fc: fc, first: true, slot: true,
		bucket: ingress.NewBucket(g.cfg.Session.RateLimit.PerSecond, g.cfg.Session.RateLimit.Burst)}
	p, err := g.newPeer(l, fc.RemoteAddr().String())
	if err != nil {
		g.live.Add(-1)
		if code, _ := codes.CodeOf(err); code == codes.Busy {
			// The entry service's control lane is full: refused as one
			// over max_sessions is, counted, not logged (a flood would
			// flood the log).
			g.m.SessionsRefused.Inc()
			g.m.LimitsHit.WithLabelValues("control_lane").Inc()
		} else {
			g.log.Error("no entry service for a new session", "listener", l.cfg.Name, "error", err)
		}
		fc.Close(session.Closed)
		return
	}
	c.direct = fc.Direct()
	c.attach(p, p.s.Attachment())
	if g.isDraining() {
		p.s.Close(session.Draining, drainNotice())
	}
	c.lastRead = time.Now()
	c.run()
}

// run is the rest of serve: the read loop, then the connection's end. A
// plain TCP read loop idle for parkAfter parks its connection (park.go)
// and its goroutine ends; the parker resumes run on a fresh goroutine,
// which takes over the parked connection's place in g.conns.
func (c *conn) run() {
	for {
		reason, notice := c.readLoop()
		if reason == parked {
			c.g.conns.Add(1) // the parked connection's, before this goroutine's own Done
			if c.g.parks.park(c) {
				return
			}
			c.g.conns.Done() // not parked: this goroutine waits on
			continue
		}
		c.out.flush() // what was admitted before the loop ended is delivered
		c.end(reason, notice)
		c.writes.Wait()    // the session's end woke the write side: its teardown or part
		c.fc.Close(reason) // closed already, with the session's first reason
		if c.slot {
			c.g.live.Add(-1)
		}
		return
	}
}

// unpark is a parked connection's new goroutine.
func (c *conn) unpark() {
	defer c.g.conns.Done()
	c.run()
}

// newPeer makes a session for a new connection on l: a random id, its
// listener's entry service as target, epoch 1, and the auth timeout.
func (g *Gateway) newPeer(l *listener, remote string) (*peer, error) {
	for {
		id := g.sessions.NewID()
		target, cerr := g.svc.Entry(l.cfg.EntryService, id)
		if cerr != nil {
			return nil, cerr
		}
		if g.svc.Crowded(target) {
			return nil, codes.New(codes.Busy, "service %s instance %d: its control lane is full", target.Service, target.Instance)
		}
		p := &peer{g: g, l: l}
		p.s = session.New(id, remote, l.profile, session.Binding{Target: target, Gateway: g.name}, g.limits,
			session.Hooks{Closed: p.closed, Answered: p.answered})
		p.s.Owner = p
		if !g.sessions.Add(p.s) {
			continue // another session drew the same random id meanwhile
		}
		g.m.Sessions.Inc()
		if d := g.cfg.Session.AuthTimeout; d > 0 {
			s := p.s
			p.authTimer.Store(time.AfterFunc(d, func() {
				if !s.Authenticated() {
					s.Close(session.AuthTimeout, &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionAuthTimeout),
						Message: "no login within " + d.String()})
				}
			}))
		}
		return p, nil
	}
}

// stopAuthTimer stops and drops the session's auth_timeout timer, if any:
// the session closed, or is bound to a player.
func (p *peer) stopAuthTimer() {
	if t := p.authTimer.Swap(nil); t != nil {
		t.Stop()
	}
}

// peerOf returns the peer of a live session, nil for a closed one.
func peerOf(s *session.Session) *peer {
	if closed, _ := s.Closed(); closed {
		return nil
	}
	p, _ := s.Owner.(*peer)
	return p
}

// attach makes p the connection's session, through att, with an idle
// write side that the session wakes from now on.
func (c *conn) attach(p *peer, att *session.Attachment) {
	c.p, c.att = p, att
	c.writes.Add(1)
	c.wstate.Store(writeIdle)
	p.s.Wakes(att, c.kick)
}

// closed is every session's Closed hook: it runs once, after the session's
// epoch is invalid. The session leaves the registry, is counted, and its
// target hears of it (never dropped; but a session replaced by a resume
// was never anyone's, and one whose target's node died has no target).
func (p *peer) closed(s *session.Session, b session.Binding, r session.Reason) {
	g := p.g
	g.sessions.Remove(s, b)
	g.m.Sessions.Dec()
	p.stopAuthTimer()
	p.gate.Drop(func(h held) {
		s.Release()
		h.t.refused(p, &h.f, "session_closed", "session_closed")
	})
	if g.tr != nil {
		g.traces.closed(s.ID)
	}
	if s.Suspended() {
		g.m.SessionsSuspended.Dec()
		g.live.Add(-1) // the slot the suspended session held
	}
	switch r {
	case session.Replaced:
		return
	case session.TargetLost:
		g.m.SessionsClosed.WithLabelValues(string(r)).Inc()
		return
	}
	g.m.SessionsClosed.WithLabelValues(string(r)).Inc()
	gone := &ingress.Disconnected{Ref: b.Ref(s.ID), Reason: string(r)}
	g.svc.Control(b.Target, gone)
	if !b.Return.IsZero() && b.Return != b.Target {
		// A room member's home still hears its session end
		// (docs/rooms.md §5.1): client_disconnected runs there too.
		g.svc.Control(b.Return, gone)
	}
}

// end is the connection's end, decided once, whichever loop gets there
// first: the session is suspended when SPEC §4 allows it, and closed
// otherwise; a session that another connection took over is left alone.
func (c *conn) end(r session.Reason, notice *envelope.Frame) {
	c.endMu.Lock()
	defer c.endMu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	s := c.p.s
	if !s.Attached(c.att) {
		return // taken over, suspended or closed already
	}
	// A session whose target's control lane is full is closed, not
	// suspended: its client_suspended could wait there behind as many
	// messages again, and a flapping connection would add two each time.
	if c.g.cfg.Session.ResumeWindow > 0 && r.Resumable() && s.Authenticated() && !c.g.isDraining() &&
		!c.g.svc.Crowded(s.Binding().Target) {
		c.parted = notice
		if s.Suspend(c.att, r, c.g.cfg.Session.ResumeWindow) {
			c.slot = false // the suspended session keeps the max_sessions slot
			c.g.m.SessionsSuspended.Inc()
			b := s.Binding()
			c.g.svc.Control(b.Target, &ingress.Suspended{Ref: b.Ref(s.ID), RemoteAddr: s.RemoteAddr})
			return
		}
	}
	s.Close(r, notice)
}

// readLoop reads frames until the connection ends and says why.
//
// session.idle_timeout is one deadline per frame, not per read: a client
// trickling bytes without finishing a frame is idle too. The next frame is
// owed by want, idle_timeout after the last one was read. Setting the
// socket's deadline for every frame cost a timer update each; the loop
// keeps the deadline it set last as long as it is no later than want and
// the wait ahead can be retried (a stream's Wait, which reads nothing when
// it times out), and sets it to want exactly when the deadline runs out
// early, or before a read that could stop inside a frame. A frame whole in
// the buffer needs no read, and no deadline. One clock reading serves the
// frames of one read.
//
// On a connection that can park (park.go) the deadline is also at most
// parkAfter past the last frame: when it runs out and no frame came since,
// the loop sets want and returns parked, and run parks the connection.
func (c *conn) readLoop() (session.Reason, *envelope.Frame) {
	idle := c.g.cfg.Session.IdleTimeout
	now := c.lastRead // when the last read that brought frames returned
	// f is each frame in turn (nothing keeps it past handle), borrowed
	// while frames arrive and given back before the loop waits, as the
	// read buffer is, so that an idle session holds none.
	var f *envelope.Frame
	defer func() { putReadFrame(f) }()
	set := func(t time.Time) error {
		if t.Equal(c.deadline) {
			return nil
		}
		c.deadline = t
		return c.fc.SetReadDeadline(t)
	}
	// A parkable connection's wait may end early to park (parkAfter):
	// its first deadline is then at most parkAfter ahead.
	retry := c.fc.RetryWait()
	canPark := retry && parkable(c.fc)
	early := func(want time.Time) time.Time {
		if park := now.Add(parkAfter); canPark && park.Before(want) {
			return park
		}
		return want
	}
	for {
		want := now.Add(idle)
		fr := c.framer()
		waited := false
		if !c.fc.Buffered(fr) {
			// The loop is about to read: the frames of the last read go
			// to their services first.
			c.out.flush()
			putReadFrame(f)
			f = nil
			// A deadline further than the park's (a frame's want, set
			// before a read inside it or by the park before last) comes
			// nearer; a parked wait keeps its own.
			if c.deadline.IsZero() || !retry || !c.resting && c.deadline.After(now.Add(parkAfter)) {
				if err := set(early(want)); err != nil {
					return session.Closed, nil
				}
			}
			if err := c.fc.Wait(); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) && retry && !c.deadline.Equal(want) {
					// The deadline of an earlier frame, or the park's: this
					// one has until want. Idle parkAfter since the last
					// frame, the connection parks.
					if canPark && time.Since(now) >= parkAfter {
						if err := set(want); err != nil { // the parked wait's: idle_timeout
							return session.Closed, nil
						}
						c.lastRead, c.resting = now, true
						return parked, nil
					}
					if err := set(early(want)); err != nil {
						return session.Closed, nil
					}
					continue
				}
				return c.readError(err)
			}
			c.resting = false
			// The cap is the session's when the frame begins to arrive.
			fr = c.framer()
			if !c.fc.Buffered(fr) {
				if err := set(want); err != nil { // the read may stop inside the frame
					return session.Closed, nil
				}
			}
			waited = true
		}
		if f == nil {
			f = readFrames.Get().(*envelope.Frame)
		}
		if err := c.fc.ReadFrame(fr, f); err != nil {
			return c.readError(err)
		}
		if waited {
			now = time.Now() // the frame has arrived: its budget counts from here
		}
		if reason, notice, end := c.handle(f, now); end {
			return reason, notice
		}
	}
}

// putReadFrame gives back a read loop's Frame, if it holds one, cleared so
// that the pool pins no body.
func putReadFrame(f *envelope.Frame) {
	if f != nil {
		*f = envelope.Frame{}
		readFrames.Put(f)
	}
}

// handle takes one frame the read loop read at now; end says the loop
// ends, why, and with what notice.
func (c *conn) handle(f *envelope.Frame, now time.Time) (session.Reason, *envelope.Frame, bool) {
	first := c.first
	c.first = false
	if c.declared.Kind != 0 || f.Kind == envelope.Deadline {
		if pe := c.pairDeadline(f); pe != nil {
			r, n := c.protocolError(pe)
			return r, n, true
		}
		if f.Kind == envelope.Deadline {
			return "", nil, false // its request is next
		}
	}
	if f.Kind == envelope.Heartbeat {
		if f.Token != "" {
			if !first {
				r, n := c.protocolError(&envelope.ProtocolError{Reason: envelope.ReasonBadSystemFrame,
					Detail: "a resume that is not the connection's first frame"})
				return r, n, true
			}
			c.out.flush() // nothing here yet (a resume is the first frame), but the session changes
			c.resume(f.Token)
		} else if !c.heartbeat(now) {
			return session.RateLimited, rateLimitedNotice(), true
		}
	} else {
		c.p.frame(f, now, c.bucket, &c.out)
	}
	select {
	case <-c.p.s.Done():
		return session.Closed, nil, true // the first reason was recorded already
	default:
	}
	if c.att.Gone() {
		return session.Closed, nil, true // suspended or taken over: nothing more to read
	}
	return "", nil, false
}

// pairDeadline keeps a Deadline frame for the request that must follow it,
// and gives that request its deadline_ms and traceparent. Anything else after a Deadline
// frame (a heartbeat included: a client writes the two together) is a
// protocol error, as a second Deadline is.
func (c *conn) pairDeadline(f *envelope.Frame) *envelope.ProtocolError {
	d := c.declared
	c.declared = envelope.Frame{}
	switch {
	case d.Kind == 0: // f is a Deadline
		c.declared = envelope.Frame{Kind: envelope.Deadline, RequestID: f.RequestID, DeadlineMS: f.DeadlineMS, TraceParent: f.TraceParent}
		return nil
	case f.Kind != envelope.Request || f.RequestID != d.RequestID:
		return &envelope.ProtocolError{Reason: envelope.ReasonBadSystemFrame,
			Detail: fmt.Sprintf("a deadline for request %d followed by a %s with request_id %d", d.RequestID, f.Kind, f.RequestID)}
	}
	f.DeadlineMS, f.TraceParent = d.DeadlineMS, d.TraceParent
	return nil
}

// framer decodes the next frame: with the listener's max_frame_bytes, or
// session.auth_max_frame_bytes while the session has no player_id (SPEC
// §3), judged when the frame begins to arrive, so that a frame pipelined
// behind a login is held to it as well, and one sent after the login's
// answer is not.
func (c *conn) framer() envelope.Framer {
	if c.l.authFramer != c.l.framer && !c.p.s.Authenticated() {
		return c.l.authFramer
	}
	return c.l.framer
}

// heartbeat echoes a heartbeat within SPEC §5's 10 a second; more are
// dropped and counted, and ten seconds in a row over it close the
// session. It reports false for that close.
//
// A heartbeat costs nothing to send and about a microsecond to read, so
// a client sending millions a second would hold a core for the 10 s
// until the close. Every beatPauseAfter heartbeats over the limit, the
// read loop stops reading for beatPause: the client's socket fills, and
// it sends no faster than the gateway drops (about 1,000 a second).
func (c *conn) heartbeat(now time.Time) bool {
	if c.beats == nil { // most sessions of most games never send one
		c.beats = ingress.NewBucket(ingress.HeartbeatsPerSecond, ingress.HeartbeatsPerSecond)
	}
	ok, flood := c.beats.Take(now)
	if ok && c.p.s.Echo() {
		return true
	}
	c.g.m.EdgeDropped.WithLabelValues(codes.RateLimited.Reason()).Inc()
	if !ok {
		if c.over++; c.over >= beatPauseAfter {
			c.over = 0
			time.Sleep(beatPause)
		}
	}
	return !flood
}

// A heartbeat flood's pace: beatPause without reading after each
// beatPauseAfter heartbeats over the limit.
const (
	beatPauseAfter = 100
	beatPause      = 100 * time.Millisecond
)

func rateLimitedNotice() *envelope.Frame {
	return &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionRateLimited),
		Message: "over the rate limit for 10 s in a row"}
}

func (c *conn) readError(err error) (session.Reason, *envelope.Frame) {
	var pe *envelope.ProtocolError
	switch {
	case errors.As(err, &pe):
		return c.protocolError(pe)
	case errors.Is(err, os.ErrDeadlineExceeded):
		if closed, _ := c.p.s.Closed(); closed {
			return session.Closed, nil
		}
		return session.IdleTimeout, &envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout),
			Message: "no complete frame within " + c.g.cfg.Session.IdleTimeout.String()}
	case errors.Is(err, io.EOF):
		return session.Closed, nil
	default:
		return session.Closed, nil
	}
}

// protocolError counts and logs an envelope violation: it closes the
// connection (SPEC §3).
func (c *conn) protocolError(pe *envelope.ProtocolError) (session.Reason, *envelope.Frame) {
	c.g.m.ProtocolErrors.WithLabelValues(string(pe.Reason)).Inc()
	if pe.Reason == envelope.ReasonTooLarge {
		c.g.m.LimitsHit.WithLabelValues("max_frame_bytes").Inc()
	}
	s := c.p.s
	c.g.log.Warn("protocol error; closing", "session_id", s.ID, "player_id", playerAttr(s.Binding().PlayerID),
		"remote", s.RemoteAddr, "reason", string(pe.Reason), "detail", pe.Detail)
	return session.ProtocolError, nil
}

// playerAttr is a player_id for a log line: null before bind (SPEC §4).
func playerAttr(p string) any {
	if p == "" {
		return nil
	}
	return p
}
