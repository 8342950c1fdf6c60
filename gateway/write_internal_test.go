package gateway

import (
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// These tests drive a connection's write side (write.go) through a fake
// transport that records what each write carries.

// recordConn is a frameConn that records its writes: each TryFlush or
// Flush that wrote something is one write, with the frames it carried.
// TryFlush fails (a full socket) while full is set, and from the
// fullAt-th on (counting from 1; 0: never); Flush blocks while hold is
// held.
type recordConn struct {
	mu      sync.Mutex // guards everything below
	pending []*envelope.Frame
	writes  [][]*envelope.Frame
	full    bool
	fullAt  int
	tries   int
	closed  bool

	hold sync.Mutex // held by a test to make Flush wait
}

var _ frameConn = (*recordConn)(nil)

func (r *recordConn) ReadFrame(envelope.Framer, *envelope.Frame) error {
	return net.ErrClosed
}
func (r *recordConn) Wait() error                      { return net.ErrClosed }
func (r *recordConn) SetReadDeadline(time.Time) error  { return nil }
func (r *recordConn) SetWriteDeadline(time.Time) error { return nil }
func (r *recordConn) Buffered(envelope.Framer) bool    { return false }
func (r *recordConn) RetryWait() bool                  { return true }
func (r *recordConn) Direct() bool                     { return true }
func (r *recordConn) Release()                         {}
func (r *recordConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

func (r *recordConn) WriteFrame(f *envelope.Frame) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, f)
	return nil
}

// BatchBytes is the body bytes of the frames not yet written.
func (r *recordConn) BatchBytes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, f := range r.pending {
		n += len(f.Body)
	}
	return n
}

func (r *recordConn) TryFlush() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, net.ErrClosed
	}
	r.tries++
	if r.full || (r.fullAt > 0 && r.tries >= r.fullAt) {
		return false, nil
	}
	r.flushLocked()
	return true, nil
}

func (r *recordConn) Flush() error {
	r.hold.Lock()
	defer r.hold.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("closed")
	}
	r.flushLocked()
	return nil
}

func (r *recordConn) flushLocked() {
	if len(r.pending) > 0 {
		r.writes = append(r.writes, r.pending)
		r.pending = nil
	}
}

func (r *recordConn) Close(session.Reason) {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// sizes is the number of frames of each write so far.
func (r *recordConn) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, len(r.writes))
	for i, w := range r.writes {
		out[i] = len(w)
	}
	return out
}

// attached makes a connection over rc for a new session of g, as serve
// does, without a read loop.
func attached(t *testing.T, g *Gateway, rc *recordConn) *conn {
	t.Helper()
	p := g.addPeer(t)
	c := &conn{g: g, l: g.listeners[0], fc: rc, first: true}
	c.direct = rc.Direct()
	c.attach(p, p.s.Attachment())
	t.Cleanup(func() {
		p.s.Close(session.Closed, nil)
		c.writes.Wait()
	})
	return c
}

// answer is a response to request id of c's session.
func answer(c *conn, id uint64) *egress.Response {
	return &egress.Response{SessionID: c.p.s.ID, RouteID: 1, RequestID: id, Service: "a", Body: []byte(`{}`), Received: time.Now()}
}

// writeLoops counts the goroutines running a write loop.
func writeLoops() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "gateway.(*conn).writeLoop")
}

// waitFor polls cond until it holds or a second has passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 1s", what)
		}
	}
}

// TestAnswersOfOneStepInOneWrite: the answers an actor hands over together
// (RespondAll) go out in one write per session; answered one by one, each
// is a write of its own. Either way they are written at once by the
// goroutine that queued them: no write loop runs.
func TestAnswersOfOneStepInOneWrite(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	a, b := &recordConn{}, &recordConn{}
	ca, cb := attached(t, g, a), attached(t, g, b)
	for range 5 { // each answer gives its request's slot back
		ca.p.s.TryAcquire()
		cb.p.s.TryAcquire()
	}
	g.RespondAll([]*egress.Response{answer(ca, 1), answer(cb, 1), answer(ca, 2), answer(ca, 3), answer(cb, 2)})
	if got := a.sizes(); len(got) != 1 || got[0] != 3 {
		t.Errorf("session a's writes: %v frames, want one write of 3", got)
	}
	if got := b.sizes(); len(got) != 1 || got[0] != 2 {
		t.Errorf("session b's writes: %v frames, want one write of 2", got)
	}
	g.Respond(answer(ca, 4))
	g.Respond(answer(ca, 5))
	if got := a.sizes(); len(got) != 3 || got[1] != 1 || got[2] != 1 {
		t.Errorf("session a's writes: %v frames, want 3, 1, 1", got)
	}
	if n := ca.p.s.Inflight(); n != 0 {
		t.Errorf("%d in-flight slots left after every answer was written", n)
	}
	if n := writeLoops(); n != 0 {
		t.Errorf("%d write loops running", n)
	}
}

// TestPartsGiveSlotsBackAsTheyGo (SPEC §5, §7): a batch goes out in parts
// of about batchBytes; a part's answers give their max_inflight slots back
// just before it is written, and when the socket does not take a part, the
// write loop gets that part and the rest goes back to the queue still
// holding its slots, so a client that stops reading cannot have more
// answers made for it than max_inflight, nor more than a part encoded
// ahead of its socket.
func TestPartsGiveSlotsBackAsTheyGo(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	rc := &recordConn{fullAt: 2} // the first part goes out, the second finds the socket full
	c := attached(t, g, rc)
	s := c.p.s
	big := make([]byte, 40<<10)
	var answers []*egress.Response
	for id := uint64(1); id <= 5; id++ {
		s.TryAcquire()
		a := answer(c, id)
		a.Body = big
		answers = append(answers, a)
	}
	rc.hold.Lock() // the write loop's Flush waits
	g.RespondAll(answers)
	waitFor(t, "write loop", func() bool { return writeLoops() == 1 })
	rc.mu.Lock()
	writes, pending := len(rc.writes), len(rc.pending)
	rc.mu.Unlock()
	if writes != 1 || pending != 2 {
		t.Errorf("%d writes and %d frames encoded ahead, want 1 write (answers 1 and 2) and 2 (answers 3 and 4)", writes, pending)
	}
	if n := s.Inflight(); n != 1 {
		t.Errorf("%d slots held while the second part waits, want 1 (answer 5, not yet encoded)", n)
	}
	rc.hold.Unlock()
	waitFor(t, "every answer written", func() bool { return s.Inflight() == 0 && writeLoops() == 0 })
	if got := rc.sizes(); len(got) != 3 || got[0] != 2 || got[1] != 2 || got[2] != 1 {
		t.Errorf("writes of %v frames, want 2, 2, 1", got)
	}
}

// TestQueuedFramesCoalesced: frames queued while the connection is busy
// writing (its socket full, the write loop waiting) go out together in its
// next write, and once everything is written the write loop ends: an idle
// session has no goroutine for writing. A push to an idle connection
// starts the write loop (the pushes queued meanwhile share its write); an
// answer is written by the goroutine that queued it.
func TestQueuedFramesCoalesced(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	rc := &recordConn{full: true}
	c := attached(t, g, rc)
	s := c.p.s
	push := &envelope.Frame{Kind: envelope.Push, RouteID: 3, Body: []byte(`{}`)}
	rc.hold.Lock() // the write loop's first Flush waits
	if !s.Offer(push) {
		t.Fatal("push refused")
	}
	waitFor(t, "write loop", func() bool { return writeLoops() == 1 })
	for range 3 {
		if !s.Offer(push) {
			t.Fatal("push refused")
		}
	}
	rc.mu.Lock()
	rc.full = false
	rc.mu.Unlock()
	rc.hold.Unlock()
	waitFor(t, "two writes", func() bool { return len(rc.sizes()) == 2 })
	if got := rc.sizes(); got[0] != 1 || got[1] != 3 {
		t.Errorf("writes of %v frames, want 1 then 3", got)
	}
	waitFor(t, "the write loop's end", func() bool { return writeLoops() == 0 })
	if st := c.wstate.Load(); st != writeIdle {
		t.Errorf("write side %d, want idle", st)
	}
	// Idle again, an answer goes out at once, without a goroutine; a
	// push through a write loop of its own, which ends once it is out.
	s.TryAcquire()
	g.Respond(answer(c, 9))
	if got := rc.sizes(); len(got) != 3 || got[2] != 1 {
		t.Errorf("writes of %v frames, want a third of 1", got)
	}
	if !s.Offer(push) {
		t.Fatal("push refused")
	}
	waitFor(t, "a fourth write", func() bool { return len(rc.sizes()) == 4 })
	waitFor(t, "the write loop's end", func() bool { return writeLoops() == 0 })
}

// TestCloseWritesNoticeAndEnds: a session closed while its connection is
// idle has its notice written by a write loop started for it, which ends
// the connection and the write side.
func TestCloseWritesNoticeAndEnds(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	rc := &recordConn{}
	c := attached(t, g, rc)
	c.p.s.Close(session.Kicked, session.KickNotice("bye"))
	c.writes.Wait()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !rc.closed || len(rc.writes) != 1 || rc.writes[0][0].Code != "session.kicked" {
		t.Fatalf("closed %v, writes %v", rc.closed, rc.writes)
	}
	if st := c.wstate.Load(); st != writeEnded {
		t.Fatalf("write side %d, want ended", st)
	}
}

// servedConn serves a gateway over real sockets and dials it.
func servedConn(t *testing.T) (*Gateway, net.Conn) {
	t.Helper()
	g := newFakeGateway(t, &fakeServices{})
	if err := g.Listen(); err != nil {
		t.Fatal(err)
	}
	g.Serve()
	t.Cleanup(func() {
		g.StopAccepting()
		g.CloseAll()
	})
	nc, err := net.Dial("tcp", g.Addr("game").String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return g, nc
}

// TestIdleSessionHasNoWriter: over a real socket, a session whose
// heartbeat was echoed (written by its read loop) runs one goroutine, its
// read loop, and no write loop.
func TestIdleSessionHasNoWriter(t *testing.T) {
	_, nc := servedConn(t)
	beat := []byte{0, 0, 0, 8, 1, 0, 0, 0, 0, 0, 0, 0} // idlen heartbeat
	if _, err := nc.Write(beat); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(time.Second))
	echo := make([]byte, len(beat))
	if _, err := io.ReadFull(nc, echo); err != nil || string(echo) != string(beat) {
		t.Fatalf("echo %x, %v", echo, err)
	}
	if n := writeLoops(); n != 0 {
		t.Fatalf("%d write loops for an idle session", n)
	}
	buf := make([]byte, 1<<20)
	if n := strings.Count(string(buf[:runtime.Stack(buf, true)]), "gateway.(*conn).readLoop"); n != 1 {
		t.Fatalf("%d read loops, want 1", n)
	}
}

// TestPushWrittenByPushWriter: over a real socket, a push to an idle
// session is written by the gateway's push writers, and no write loop is
// left behind.
func TestPushWrittenByPushWriter(t *testing.T) {
	g, nc := servedConn(t)
	var s *session.Session
	waitFor(t, "the session", func() bool {
		all := g.sessions.All()
		if len(all) == 1 {
			s = all[0]
		}
		return s != nil
	})
	ref := s.Ref()
	if got := g.Push(&egress.Push{RouteID: 3, Bodies: map[string][]byte{"json": []byte(`{}`)}, Targets: []egress.ClientRef{ref}}); got[0] != "" {
		t.Fatalf("push refused: %s", got[0])
	}
	_ = nc.SetReadDeadline(time.Now().Add(time.Second))
	frame := make([]byte, 14) // idlen: length 10, header, "{}"
	if _, err := io.ReadFull(nc, frame); err != nil || string(frame[12:]) != "{}" || frame[7] != 3 {
		t.Fatalf("push %x, %v", frame, err)
	}
	waitFor(t, "no write loop", func() bool { return writeLoops() == 0 })
}
