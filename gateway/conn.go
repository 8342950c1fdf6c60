package gateway

import (
	"bufio"
	"errors"
	"io"
	"net"
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
// write loop is the only goroutine that writes to nc.
type conn struct {
	g      *Gateway
	l      *listener
	nc     net.Conn
	s      *session.Session
	bucket *ingress.Bucket
	warned map[codes.Code]int64 // last unix second a drop of that reason was logged
}

// readBufferSize is enough for typical game frames in one read while
// keeping an idle session small.
const readBufferSize = 4096

// serve runs one connection until it closes.
func (g *Gateway) serve(l *listener, nc net.Conn) {
	id := g.nextID.Add(1)
	target, err := g.svc.Entry(l.cfg.EntryService, id)
	if err != nil {
		g.log.Error("no entry service for a new session", "listener", l.cfg.Name, "error", err)
		nc.Close()
		return
	}
	c := &conn{g: g, l: l, nc: nc, warned: map[codes.Code]int64{},
		bucket: ingress.NewBucket(g.cfg.Session.RateLimit.PerSecond, g.cfg.Session.RateLimit.Burst)}
	b := session.Binding{Target: target, Gateway: g.name, Profile: l.cfg.Name}
	// Answers get a reserve of max_inflight slots on top of
	// outbound_queue: see Session.EnqueueAnswer.
	c.s = session.New(id, nc.RemoteAddr().String(), b, g.cfg.Session.OutboundQueue, g.cfg.Session.MaxInflight, g.onClose)
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
	nc.Close()
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
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	idle := c.g.cfg.Session.IdleTimeout
	for {
		// One deadline per frame, not per read: a client trickling bytes
		// without finishing a frame is idle too.
		if err := c.nc.SetReadDeadline(time.Now().Add(idle)); err != nil {
			return session.Closed, nil
		}
		f, err := c.l.codec.ReadFrame(br)
		if err != nil {
			return c.readError(err)
		}
		if f.Kind == envelope.Heartbeat {
			// No token for heartbeats; a full queue drops the echo, and
			// the client's own timeout takes it from there.
			c.s.Enqueue(heartbeat)
			continue
		}
		c.frame(&f)
		if closed, _ := c.s.Closed(); closed {
			return session.Closed, nil
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

// writeLoop drains the session's queue into as few writes as it can: every
// frame queued by the time it wakes goes out in one write.
func (c *conn) writeLoop() {
	const batchBytes = 64 << 10
	var buf []byte
	out, done := c.s.Out(), c.s.Done()
	for {
		select {
		case f := <-out:
			buf = c.append(buf[:0], f)
		drain:
			for len(buf) < batchBytes {
				select {
				case f := <-out:
					buf = c.append(buf, f)
				default:
					break drain
				}
			}
			if !c.write(buf) {
				return
			}
			if cap(buf) > 4*batchBytes {
				buf = nil // one huge frame should not pin its buffer
			}
		case <-done:
			// Closing: what is queued, then the notice, then the end.
			buf = buf[:0]
			for more := true; more; {
				select {
				case f := <-out:
					buf = c.append(buf, f)
				default:
					more = false
				}
			}
			if n := c.s.Notice(); n != nil {
				buf = c.append(buf, n)
			}
			if len(buf) > 0 {
				c.write(buf)
			}
			c.nc.Close()
			return
		}
	}
}

func (c *conn) append(buf []byte, f *envelope.Frame) []byte {
	out, err := c.l.codec.AppendFrame(buf, f)
	if err != nil {
		c.g.log.Error("frame not encodable; dropped", "session_id", c.s.ID, "kind", f.Kind.String(), "route_id", f.RouteID, "error", err)
		return buf
	}
	return out
}

// write writes buf under write_timeout. A timeout means the client does not
// read: it is closed as a slow consumer.
func (c *conn) write(buf []byte) bool {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.g.cfg.Session.WriteTimeout)); err != nil {
		c.s.Close(session.WriteFailed, nil)
		c.nc.Close()
		return false
	}
	if _, err := c.nc.Write(buf); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.g.m.LimitsHit.WithLabelValues("slow_consumer").Inc()
			c.s.Close(session.SlowConsumer, nil)
		} else {
			c.s.Close(session.WriteFailed, nil)
		}
		c.nc.Close() // wakes the read loop
		return false
	}
	return true
}
