package gateway

import (
	"errors"
	"os"
	"time"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// The write side of a connection. Exactly one goroutine at a time owns it
// and writes to the socket, in the order frames were queued, but no
// goroutine is kept waiting for frames: an idle session has none (SPEC §7
// holds as it did; idle memory is the reason, see BENCHMARKS.md). Whatever
// concerns the write side (frames queued, the session closing, the session
// leaving the connection) wakes it through the session (kick, the
// attachment's waker). The goroutine that finds it idle takes it:
//
//   - on a plain TCP connection it writes what is queued itself, at once,
//     without blocking (streamConn.TryFlush): a service's goroutine writes
//     the answers it just produced, the read loop its heartbeat echoes.
//     The answers of one actor step come as one wake (Gateway.RespondAll),
//     so one session's answers go out in one write. A push goes to the
//     gateway's push writers instead (kick, writers.go), which write the
//     same way, in parallel with the service;
//   - whatever would block (a socket buffer that is full, TLS, WebSocket,
//     the session's end with its notice) goes to the write loop, a
//     goroutine started then, which writes under write_timeout and ends
//     when nothing is left to write.
//
// This breaks STYLE.md's "one writer goroutine owns the socket" to the
// letter, not in spirit: one owner at a time, handed over through wstate,
// and the write loop is joined (writeEnded) before the connection closes.

// The write side's states (conn.wstate).
const (
	writeIdle  int32 = iota // nobody owns it: nothing queued, the session here and open
	writeBusy               // a goroutine owns it
	writeAgain              // a goroutine owns it, and was woken since it last looked
	writeEnded              // the connection is done writing (ended, part, failed): wakes do nothing
)

// kick is the connection's waker (session.Waker): it takes the write side
// if it is idle, or tells its owner to look again. Taken for a push
// (soon), the write side goes to the gateway's push writers (writers.go):
// the pushing service does not write every member's socket itself, and the
// pushes queued while the connection waits its turn share its write.
func (c *conn) kick(soon bool) {
	for {
		switch st := c.wstate.Load(); st {
		case writeIdle:
			if c.wstate.CompareAndSwap(writeIdle, writeBusy) {
				if soon && c.g.writers.wake != nil {
					c.g.writers.add(c) // a push writer writes it, and the pushes queued meanwhile
				} else {
					c.own()
				}
				return
			}
		case writeBusy:
			if c.wstate.CompareAndSwap(writeBusy, writeAgain) {
				return
			}
		default: // writeAgain, writeEnded
			return
		}
	}
}

// release gives the write side up: true when it is idle now, false when a
// wake came meanwhile and the owner must look again.
func (c *conn) release() bool {
	if c.wstate.CompareAndSwap(writeBusy, writeIdle) {
		return true
	}
	c.wstate.Store(writeBusy) // it was writeAgain
	return false
}

// own runs on the goroutine that took the write side: it writes what is
// queued without blocking, for as long as that is all there is to do, and
// hands everything else to the write loop.
func (c *conn) own() {
	s, att := c.p.s, c.att
	for {
		if !c.direct || c.greeting != nil || isDone(s.Done()) || att.Gone() {
			c.startLoop(nil)
			return
		}
		batch := s.Take(c.batch[:0])
		c.batch = batch[:0]
		if len(batch) > 0 {
			if !s.Attached(att) {
				s.Requeue(batch) // for the connection that resumes it; Gone is next
				clear(batch)
				continue
			}
			if !c.tryBatch(batch) {
				return // the write loop has the rest
			}
			c.fc.Release()
		}
		if c.release() {
			return
		}
	}
}

// tryBatch writes a batch without blocking, in parts of about batchBytes
// as writeBatch does: a part's answers give their slots back just before it
// goes out (Session.Sending), and no more than a part is encoded ahead of
// the socket. When the socket does not take a part whole (or a frame
// cannot be written) it hands the write loop what was encoded, gives the
// rest back to the queue, in order, still counting, and reports false.
func (c *conn) tryBatch(batch []session.Item) bool {
	s := c.p.s
	from := 0
	for i := range batch {
		if err := c.put(batch[i].Frame); err != nil {
			s.Requeue(batch[i+1:])
			c.startLoop(batch[:i+1]) // the loop fails it again, and ends the connection
			return false
		}
		if c.fc.BatchBytes() < batchBytes && i+1 < len(batch) {
			continue
		}
		part := batch[from : i+1]
		from = i + 1
		s.Sending(part)
		done, err := c.fc.TryFlush()
		if err != nil || !done {
			s.Requeue(batch[i+1:])
			c.startLoop(part) // what did not go out is the loop's to wait for
			return false
		}
		c.wrote(part)
	}
	return true
}

// wrote is the end of a part of a batch that went out: its answer frames
// serve again, and its frames stop counting against the session's bounds
// and are let go now, not when the whole batch is done (a part that went
// out must not hold memory while a later one waits for the socket).
// Calling it again on the same part does nothing.
func (c *conn) wrote(part []session.Item) {
	c.recycle(part)
	c.p.s.Written(part)
}

// recycle is recycleAnswers for frames just written to the socket: with
// tracing on, their requests' spans end first (trace.go).
func (c *conn) recycle(written []session.Item) {
	if tr := c.g.tr; tr != nil {
		c.g.traces.written(tr, c.p.s.ID, written, time.Now())
	}
	recycleAnswers(written)
}

// startLoop starts the write loop, which takes over the write side from
// its caller; pending is a batch taken and encoded whose bytes did not all
// go out.
func (c *conn) startLoop(pending []session.Item) {
	if pending != nil {
		pending = append([]session.Item(nil), pending...) // c.batch is the next owner's
	}
	go c.writeLoop(pending)
}

// writeLoop owns the write side until nothing is left to write: it writes
// pending (see startLoop), then everything the session queues, each batch
// under write_timeout, until the queue is empty (it gives the write side
// up and ends), the session closes (then what is queued and its notice go
// out and the connection closes), the session leaves this connection
// (suspended or taken over), or a write fails.
func (c *conn) writeLoop(pending []session.Item) {
	s, att := c.p.s, c.att
	if g := c.greeting; g != nil {
		c.greeting = nil
		if !c.writeBatch([]session.Item{{Frame: g}}) {
			c.endWrites()
			return
		}
	}
	if pending != nil {
		s.Sending(pending)
		ok := c.flush(time.Now().Add(c.g.cfg.Session.WriteTimeout))
		if ok {
			c.recycle(pending)
		}
		s.Written(pending)
		if !ok {
			c.endWrites()
			return
		}
	}
	var batch []session.Item
	for {
		switch {
		case att.Gone(): // suspended or taken over (and maybe closed since): not ours to tear down
			c.part()
			c.endWrites()
			return
		case isDone(s.Done()):
			c.teardown()
			c.endWrites()
			return
		}
		batch = s.Take(batch[:0])
		if len(batch) == 0 {
			// Nothing left: the deadline of the last batch must not fail
			// the next owner's writes, which do not block.
			_ = c.fc.SetWriteDeadline(time.Time{})
			c.fc.Release()
			if c.release() {
				return
			}
			continue
		}
		if !s.Attached(att) {
			// Suspended or taken over while the frames were taken: they
			// belong to whichever connection resumes it.
			s.Requeue(batch)
			clear(batch)
			continue
		}
		ok := c.writeBatch(batch)
		if ok {
			c.recycle(batch)
		}
		s.Written(batch)
		if !ok {
			c.endWrites()
			return
		}
	}
}

// endWrites marks the write side ended for good and tells whoever waits
// for it (serve, resume).
func (c *conn) endWrites() {
	c.wstate.Store(writeEnded)
	c.fc.Release()
	c.writes.Done()
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// writeBatch writes the frames of a batch, each part of about batchBytes
// under its own write_timeout. The answers of a part give their slots
// back just before it is written (Session.Sending), not all at once: the
// rest of a batch stuck behind a client that does not read still counts
// (SPEC §7's bound on what one session holds). A failure ends the
// connection and reports false.
func (c *conn) writeBatch(batch []session.Item) bool {
	s := c.p.s
	timeout := c.g.cfg.Session.WriteTimeout
	deadline := time.Now().Add(timeout)
	from := 0
	for i := range batch {
		if err := c.put(batch[i].Frame); err != nil {
			c.writeFailed(err)
			return false
		}
		if c.fc.BatchBytes() >= batchBytes && i+1 < len(batch) {
			part := batch[from : i+1]
			from = i + 1
			s.Sending(part)
			if !c.flush(deadline) {
				return false
			}
			c.wrote(part)
			deadline = time.Now().Add(timeout)
		}
	}
	s.Sending(batch[from:])
	return c.flush(deadline)
}

// flush writes what the connection buffered, blocking until deadline at
// most. A failure ends the connection and reports false.
func (c *conn) flush(deadline time.Time) bool {
	if err := c.fc.SetWriteDeadline(deadline); err != nil {
		c.writeFailed(err)
		return false
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
	c.closeFC(reason)
}

// part ends a connection whose session left it: suspended (the notice the
// connection's end is owed, such as session.idle_timeout, still goes
// out), or taken over by a resume elsewhere (closed without a notice).
func (c *conn) part() {
	c.endMu.Lock()
	n := c.parted
	c.endMu.Unlock()
	if n == nil {
		c.closeFC(session.WriteFailed) // no goodbye: the connection is half dead
		return
	}
	if c.writeBatch([]session.Item{{Frame: n}}) {
		c.closeFC(session.IdleTimeout)
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
	c.closeFC(r)
}
