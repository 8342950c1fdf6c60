package gateway

import (
	"bufio"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	internaltestutil "github.com/shieldrpc/shield/internal/testutil"
)

// These tests run one connection of a real Gateway over net.Pipe, for the
// ends of a connection that a loopback socket cannot produce on demand: a
// connection admitted after the drain began, and writes that fail with an
// error that is not a timeout. What the services hear is recorded.

// controls records the session lifecycle messages a gateway sends its
// services.
type controls struct {
	fakeServices
	mu   sync.Mutex
	msgs []any
}

func (c *controls) Control(_ egress.ActorID, m any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
}

// disconnects returns the reasons of the Disconnected messages so far.
func (c *controls) disconnects() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if d, ok := m.(*ingress.Disconnected); ok {
			out = append(out, d.Reason)
		}
	}
	return out
}

func newRecordingGateway(t testing.TB, svc Services) *Gateway {
	t.Helper()
	cfg, errs := config.Parse("/fake/shield.yaml", []byte(fakeYAML))
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	table, errs := descriptor.Merge(cfg)
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Config: cfg, Table: table, Services: svc, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// brokenConn is a connection whose writes fail, once fail is set, as a
// reset connection's do: not with a timeout.
type brokenConn struct {
	net.Conn
	fail atomic.Bool
}

var errBroken = errors.New("connection reset by peer (test)")

func (b *brokenConn) Write(p []byte) (int, error) {
	if b.fail.Load() {
		return 0, errBroken
	}
	return b.Conn.Write(p)
}

// servePipe serves one connection of g over a pipe; it returns the
// client's end and a channel closed when serve has returned.
func servePipe(t *testing.T, g *Gateway, wrap func(net.Conn) net.Conn) (net.Conn, <-chan struct{}) {
	t.Helper()
	internaltestutil.CheckGoroutines(t)
	srv, cli := net.Pipe()
	t.Cleanup(func() { cli.Close() })
	l := g.listeners[0]
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.serve(l, newStreamConn(wrap(srv), l.framer))
	}()
	return cli, done
}

// waitDone waits for serve to return.
func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection never ended")
	}
}

// TestAdmittedAfterDrainGetsNotice (SPEC §9): a connection that reaches
// the gateway after the drain began (accepted as the listener closed, a
// handshake that finished late) is not served: it gets the
// gateway.draining notice and is closed, and its session's Disconnected
// says draining.
func TestAdmittedAfterDrainGetsNotice(t *testing.T) {
	svc := &controls{}
	g := newRecordingGateway(t, svc)
	g.StopAccepting()
	cli, done := servePipe(t, g, func(c net.Conn) net.Conn { return c })
	codec, err := envelope.New("idlen", envelope.FromServer, 65536)
	if err != nil {
		t.Fatal(err)
	}
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(cli)
	f, err := envelope.Read(codec, br)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != envelope.Notice || f.Code != string(codes.GatewayDraining) {
		t.Fatalf("first frame %+v, want the gateway.draining notice", f)
	}
	if _, err := envelope.Read(codec, br); err == nil {
		t.Fatal("the connection goes on after the draining notice")
	}
	waitDone(t, done)
	if got := svc.disconnects(); len(got) != 1 || got[0] != "draining" {
		t.Fatalf("Disconnected reasons %v, want [draining]", got)
	}
}

// TestWriteFailedDisconnect (SPEC §4): a write that fails other than by
// timing out ends the session with reason write_failed (not slow_consumer,
// which is a timeout's), counted and told to its target.
func TestWriteFailedDisconnect(t *testing.T) {
	svc := &controls{}
	g := newRecordingGateway(t, svc)
	cli, done := servePipe(t, g, func(c net.Conn) net.Conn {
		b := &brokenConn{Conn: c}
		b.fail.Store(true)
		return b
	})
	// A heartbeat makes the gateway write its echo.
	beat, err := g.listeners[0].framer.AppendFrame(nil, &envelope.Frame{Kind: envelope.Heartbeat})
	if err != nil {
		t.Fatal(err)
	}
	cli.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := cli.Write(beat); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
	if got := svc.disconnects(); len(got) != 1 || got[0] != "write_failed" {
		t.Fatalf("Disconnected reasons %v, want [write_failed]", got)
	}
	if n := testutil.ToFloat64(g.m.SessionsClosed.WithLabelValues("write_failed")); n != 1 {
		t.Fatalf("sessions_closed{write_failed} = %v, want 1", n)
	}
	if n := testutil.ToFloat64(g.m.LimitsHit.WithLabelValues("slow_consumer")); n != 0 {
		t.Fatalf("a failed write counted as a slow consumer (%v)", n)
	}
}

// TestTeardownWriteFails: a session closed on purpose (a kick) whose
// notice cannot be written still ends its connection, and keeps its first
// reason: one Disconnected, kicked; the failed write adds no other.
func TestTeardownWriteFails(t *testing.T) {
	svc := &controls{}
	g := newRecordingGateway(t, svc)
	var conn *brokenConn
	_, done := servePipe(t, g, func(c net.Conn) net.Conn {
		conn = &brokenConn{Conn: c}
		return conn
	})
	deadline := time.Now().Add(5 * time.Second)
	for g.sessions.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	all := g.sessions.All()
	if len(all) != 1 {
		t.Fatalf("%d sessions", len(all))
	}
	conn.fail.Store(true)
	s := all[0]
	if err := g.Kick(s.Binding().Ref(s.ID), "bye"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
	if got := svc.disconnects(); len(got) != 1 || got[0] != "kicked" {
		t.Fatalf("Disconnected reasons %v, want [kicked]", got)
	}
	if n := testutil.ToFloat64(g.m.SessionsClosed.WithLabelValues("write_failed")); n != 0 {
		t.Fatalf("sessions_closed{write_failed} = %v, want 0", n)
	}
}
