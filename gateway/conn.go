package gateway

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/session"
)

// conn is one client connection: its read loop runs on the goroutine that
// serve was called on, and owns the session's bucket and warn state; its
// write loop is the only goroutine that writes frames to fc.
type conn struct {
	g      *Gateway
	l      *listener
	fc     frameConn
	s      *session.Session
	bucket *ingress.Bucket
	warned map[codes.Code]int64 // last unix second a drop of that reason was logged
}

// serve runs one connection, whatever its transport, until it closes.
func (g *Gateway) serve(l *listener, fc frameConn) {
	id := g.nextID.Add(1)
	target, err := g.svc.Entry(l.cfg.EntryService, id)
	if err != nil {
		g.log.Error("no entry service for a new session", "listener", l.cfg.Name, "error", err)
		fc.Close(session.Closed)
		return
	}
	c := &conn{g: g, l: l, fc: fc,
		bucket: ingress.NewBucket(g.cfg.Session.RateLimit.PerSecond, g.cfg.Session.RateLimit.Burst)}
	b := session.Binding{Target: target, Gateway: g.name, Profile: l.cfg.Name}
	// Answers get a reserve of max_inflight slots on top of
	// outbound_queue: see Session.EnqueueAnswer.
	c.s = session.New(id, fc.RemoteAddr().String(), b, g.cfg.Session.OutboundQueue, g.cfg.Session.MaxInflight, g.onClose)
	g.sessions.Add(c.s)
	g.m.Sessions.Inc()

	g.mu.Lock()
	draining := g.draining
	g.mu.Unlock()
	if draining {
		c.s.Close(session.Draining, drainNotice())
	}

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	reason, notice := c.readLoop()
	c.s.Close(reason, notice)
	<-writerDone
	fc.Close(reason) // the write loop closed it already, with the session's first reason
}

// onClose runs once per session, after its epoch is invalid: it leaves the
// table, is counted, and its target hears of it (never dropped).
func (g *Gateway) onClose(s *session.Session, b session.Binding, r session.Reason) {
	g.sessions.Remove(s, b)
	g.m.Sessions.Dec()
	g.m.SessionsClosed.WithLabelValues(string(r)).Inc()
	ref := egress.ClientRef{SessionID: s.ID, Epoch: b.Epoch, PlayerID: b.PlayerID, Gateway: b.Gateway}
	g.svc.Disconnect(b.Target, &ingress.Disconnected{Ref: ref, Reason: string(r)})
}

func drainNotice() *envelope.Frame {
	return &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDraining), Message: "the gateway is shutting down"}
}

// readLoop reads frames until the connection ends and says why.
func (c *conn) readLoop() (session.Reason, *envelope.Frame) {
	idle, done := c.g.cfg.Session.IdleTimeout, c.s.Done()
	for {
		// One deadline per frame, not per read: a client trickling bytes
		// without finishing a frame is idle too.
		if err := c.fc.SetReadDeadline(time.Now().Add(idle)); err != nil {
			return session.Closed, nil
		}
		f, err := c.fc.ReadFrame()
		if err != nil {
			return c.readError(err)
		}
		if f.Kind == envelope.Heartbeat {
			// No token for heartbeats; a full queue drops the echo, and
			// the client's own timeout takes it from there.
			c.s.Enqueue(heartbeat)
			continue
		}
		c.frame(&f, time.Now())
		select {
		case <-done:
			return session.Closed, nil // the first reason was recorded already
		default:
		}
	}
}

var heartbeat = &envelope.Frame{Kind: envelope.Heartbeat}

func (c *conn) readError(err error) (session.Reason, *envelope.Frame) {
	var pe *envelope.ProtocolError
	switch {
	case errors.As(err, &pe):
		c.g.m.ProtocolErrors.WithLabelValues(string(pe.Reason)).Inc()
		if pe.Reason == envelope.ReasonTooLarge {
			c.g.m.LimitsHit.WithLabelValues("max_frame_bytes").Inc()
		}
		c.g.log.Warn("protocol error; closing", "session_id", c.s.ID, "player_id", c.s.Binding().PlayerID,
			"remote", c.s.RemoteAddr, "reason", string(pe.Reason), "detail", pe.Detail)
		return session.ProtocolError, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		if closed, _ := c.s.Closed(); closed {
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

// writeLoop drains the session's queue in batches: every frame queued by
// the time it wakes, up to about batchBytes, goes out under one
// write_timeout (on a stream, in one write).
func (c *conn) writeLoop() {
	out, done := c.s.Out(), c.s.Done()
	for {
		select {
		case f := <-out:
			if !c.writeBatch(f) {
				return
			}
		case <-done:
			c.teardown()
			return
		}
	}
}

// writeBatch writes f and the frames queued behind it. A failure closes the
// session and the connection, and reports false.
func (c *conn) writeBatch(f *envelope.Frame) bool {
	if err := c.fc.SetWriteDeadline(time.Now().Add(c.g.cfg.Session.WriteTimeout)); err != nil {
		c.writeFailed(err)
		return false
	}
	out := c.s.Out()
	for {
		if err := c.put(f); err != nil {
			c.writeFailed(err)
			return false
		}
		if c.fc.BatchBytes() >= batchBytes {
			break
		}
		select {
		case f = <-out:
			continue
		default:
		}
		break
	}
	if err := c.fc.Flush(); err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// teardown runs once the session is closed: what is queued, then the
// notice, then the end of the connection.
func (c *conn) teardown() {
	_, reason := c.s.Closed()
	if err := c.fc.SetWriteDeadline(time.Now().Add(c.g.cfg.Session.WriteTimeout)); err != nil {
		c.fc.Close(session.WriteFailed)
		return
	}
	out := c.s.Out()
	for more := true; more; {
		select {
		case f := <-out:
			if c.put(f) != nil {
				c.fc.Close(session.WriteFailed)
				return
			}
		default:
			more = false
		}
	}
	if n := c.s.Notice(); n != nil && c.put(n) != nil {
		c.fc.Close(session.WriteFailed)
		return
	}
	if c.fc.Flush() != nil {
		c.fc.Close(session.WriteFailed)
		return
	}
	c.fc.Close(reason)
}

// put hands one frame to the connection. A frame the envelope cannot carry
// is logged and dropped (nil); any other error is the connection's.
func (c *conn) put(f *envelope.Frame) error {
	err := c.fc.WriteFrame(f)
	if err != nil && errors.Is(err, envelope.ErrInvalidFrame) {
		c.g.log.Error("frame not encodable; dropped", "session_id", c.s.ID, "kind", f.Kind.String(), "route_id", f.RouteID, "error", err)
		return nil
	}
	return err
}

// writeFailed closes the session after a failed write. A timeout means the
// client does not read: it is closed as a slow consumer. Closing the
// connection wakes the read loop.
func (c *conn) writeFailed(err error) {
	r := session.WriteFailed
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.g.m.LimitsHit.WithLabelValues("slow_consumer").Inc()
		r = session.SlowConsumer
	}
	c.s.Close(r, nil)
	c.fc.Close(r)
}
