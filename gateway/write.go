package gateway

import (
	"errors"
	"os"
	"time"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// startWriter starts the connection's write loop on the session it is
// attached to now.
func (c *conn) startWriter() {
	c.writerDone = make(chan struct{})
	go func() {
		defer close(c.writerDone)
		c.writeLoop()
	}()
}

// writeLoop is the only goroutine that writes to the connection. It takes
// everything the session queued at once and writes it as one batch (on a
// stream, in as few writes as batchBytes allows), until the session
// closes (then what is queued and its notice go out), the session leaves
// this connection (suspended or taken over), or a write fails.
func (c *conn) writeLoop() {
	s, att := c.p.s, c.att
	if g := c.greeting; g != nil {
		c.greeting = nil
		if !c.writeBatch([]session.Item{{Frame: g}}) {
			return
		}
	}
	var batch []session.Item
	for {
		select {
		case <-s.Ready():
			batch = s.Take(batch[:0])
			if !s.Attached(att) {
				// Suspended or taken over while the frames were taken:
				// they belong to whichever connection resumes it.
				s.Requeue(batch)
				continue
			}
			ok := c.writeBatch(batch)
			s.Written(batch)
			if !ok {
				return
			}
		case <-s.Done():
			c.teardown()
			return
		case <-att.Gone():
			c.part()
			return
		}
	}
}

// writeBatch writes the frames of a batch, each part of about batchBytes
// under its own write_timeout. A failure ends the connection and reports
// false.
func (c *conn) writeBatch(batch []session.Item) bool {
	timeout := c.g.cfg.Session.WriteTimeout
	if err := c.fc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		c.writeFailed(err)
		return false
	}
	for i := range batch {
		if err := c.put(batch[i].Frame); err != nil {
			c.writeFailed(err)
			return false
		}
		if c.fc.BatchBytes() >= batchBytes && i+1 < len(batch) {
			if err := c.fc.Flush(); err != nil {
				c.writeFailed(err)
				return false
			}
			if err := c.fc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
				c.writeFailed(err)
				return false
			}
		}
	}
	if err := c.fc.Flush(); err != nil {
		c.writeFailed(err)
		return false
	}
	return true
}

// teardown runs once the session is closed: what is queued, then the
// notice, then the end of the connection. A session replaced by a resume
// leaves the connection to the session it resumed.
func (c *conn) teardown() {
	s := c.p.s
	_, reason := s.Closed()
	if reason == session.Replaced {
		return
	}
	batch := s.Take(nil)
	if n := s.Notice(); n != nil {
		batch = append(batch, session.Item{Frame: n})
	}
	if len(batch) > 0 && !c.writeBatch(batch) {
		return
	}
	c.fc.Close(reason)
}

// part ends a connection whose session left it: suspended (the notice the
// connection's end is owed, such as session.idle_timeout, still goes
// out), or taken over by a resume elsewhere (closed without a notice).
func (c *conn) part() {
	c.endMu.Lock()
	n := c.parted
	c.endMu.Unlock()
	if n == nil {
		c.fc.Close(session.WriteFailed) // no goodbye: the connection is half dead
		return
	}
	if c.writeBatch([]session.Item{{Frame: n}}) {
		c.fc.Close(session.IdleTimeout)
	}
}

// put hands one frame to the connection. A frame the envelope cannot carry
// is logged and dropped (nil); any other error is the connection's.
func (c *conn) put(f *envelope.Frame) error {
	err := c.fc.WriteFrame(f)
	if err != nil && errors.Is(err, envelope.ErrInvalidFrame) {
		c.g.log.Error("frame not encodable; dropped", "session_id", c.p.s.ID, "kind", f.Kind.String(), "route_id", f.RouteID, "error", err)
		return nil
	}
	return err
}

// writeFailed ends the connection after a failed write. A timeout means
// the client does not read: a slow consumer, closed without a notice; any
// other failure may leave the session suspended for a resume. Closing the
// connection wakes the read loop.
func (c *conn) writeFailed(err error) {
	r := session.WriteFailed
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.g.m.LimitsHit.WithLabelValues("slow_consumer").Inc()
		r = session.SlowConsumer
	}
	c.end(r, nil)
	c.fc.Close(r)
}
