package acceptance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
)

// The edge and limits tests run testdata/limits.lua behind a gateway of
// their own, whose session block each test chooses, with one listener per
// envelope (named after it) and a "spin" listener in front of a service
// with a one-message mailbox.

// Routes of testdata/limits.lua.
const (
	rLogin     = 101
	rEcho      = 102
	rWhoami    = 103
	rMark      = 104
	rMarks     = 105
	rSleep     = 106
	rJoin      = 107
	rBroadcast = 108
	rPush      = 109
	rNote      = 201 // s2c
	rBig       = 202 // s2c
	rSpin      = 301
)

// edgeGateway is the node name of the edge tests' gateway.
const edgeGateway = "gw-edge"

// patience is the deadline of every wait in these tests.
const patience = 5 * time.Second

func edgeConfig(t testing.TB, session string) string {
	t.Helper()
	script, err := filepath.Abs("testdata/limits.lua")
	if err != nil {
		t.Fatal(err)
	}
	var listeners strings.Builder
	for _, e := range envelopes {
		fmt.Fprintf(&listeners, "    - {name: %s, address: \"127.0.0.1:0\", entry_service: edge, protocol: {envelope: %s}}\n", e, e)
	}
	listeners.WriteString("    - {name: spin, address: \"127.0.0.1:0\", entry_service: spin}\n")
	return fmt.Sprintf(`node: {name: %s}
network:
  listeners:
%s
session:
%s
actors:
  - name: edge
    script: %[4]s
    rpc:
      routes:
        - {id: %d, name: login, binding: login, requires_auth: false}
        - {id: %d, name: echo, binding: echo, requires_auth: false}
        - {id: %d, name: whoami, binding: whoami, requires_auth: false}
        - {id: %d, name: mark, binding: mark, requires_auth: false}
        - {id: %d, name: marks, binding: marks, requires_auth: false}
        - {id: %d, name: sleep, binding: sleep, requires_auth: false}
        - {id: %d, name: join, binding: join}
        - {id: %d, name: broadcast, binding: broadcast}
        - {id: %d, name: push, binding: push}
        - {id: %d, name: note, binding: note, direction: s2c}
        - {id: %d, name: big, binding: big, direction: s2c}
  - name: spin
    script: %[4]s
    mailbox: 1
    rpc:
      routes:
        - {id: %[16]d, name: spin, binding: spin, requires_auth: false}
`, edgeGateway, listeners.String(), session, script,
		rLogin, rEcho, rWhoami, rMark, rMarks, rSleep, rJoin, rBroadcast, rPush, rNote, rBig, rSpin)
}

// edgeServer is a running gateway with the limits service, and what it
// logged.
type edgeServer struct {
	srv     *bootstrap.Server
	logs    *logSink
	mu      sync.Mutex // guards stopped
	stopped bool
}

// startEdge starts a gateway; session holds the session block's keys, each
// indented two spaces ("" for the defaults). It is stopped, unless the test
// stopped it, and goroutines are checked at cleanup.
func startEdge(t testing.TB, session string) *edgeServer {
	t.Helper()
	before := runtime.NumGoroutine()
	if session == "" {
		session = "  idle_timeout: 60s"
	}
	path := filepath.Join(t.TempDir(), "edge.yaml")
	if err := os.WriteFile(path, []byte(edgeConfig(t, session)), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, path, bootstrap.Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	e := &edgeServer{srv: srv, logs: logs}
	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		waitGoroutines(t, before)
		if t.Failed() {
			t.Logf("server log:\n%s", logs.dump())
		}
	})
	return e
}

// stop drains the server once.
func (e *edgeServer) stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.srv.Stop(ctx)
}

func (e *edgeServer) addr(listener string) string { return e.srv.Gateway.Addr(listener).String() }

// client dials a listener with the Go client, closed at cleanup.
func (e *edgeServer) client(t testing.TB, listener string) *client.Client {
	t.Helper()
	env := listener
	if listener == "spin" {
		env = "idlen"
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := client.Dial(ctx, e.addr(listener), client.Options{Envelope: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The metrics the tests watch.
func (e *edgeServer) dropped(reason string) float64 {
	return testutil.ToFloat64(e.srv.Metrics.EdgeDropped.WithLabelValues(reason))
}
func (e *edgeServer) egressRejected(reason string) float64 {
	return testutil.ToFloat64(e.srv.Metrics.EgressRejected.WithLabelValues(reason))
}
func (e *edgeServer) closedTotal(reason string) float64 {
	return testutil.ToFloat64(e.srv.Metrics.SessionsClosed.WithLabelValues(reason))
}
func (e *edgeServer) limitHit(limit string) float64 {
	return testutil.ToFloat64(e.srv.Metrics.LimitsHit.WithLabelValues(limit))
}

// callCode makes a request that must fail, and returns its code.
func callCode(t testing.TB, c *client.Client, route uint32, req any) codes.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := c.Call(ctx, route, req, nil)
	code, ok := codes.CodeOf(err)
	if !ok {
		t.Fatalf("route %d: want an error frame, got %v", route, err)
	}
	return code
}

// ref is a ClientRef as Lua and JSON spell it.
type ref struct {
	SessionID uint64 `json:"session_id"`
	Epoch     uint64 `json:"epoch"`
	PlayerID  string `json:"player_id,omitempty"`
	Gateway   string `json:"gateway"`
}

// loginAs logs c in as user and returns its new ref.
func loginAs(t testing.TB, c *client.Client, user string) ref {
	t.Helper()
	var r ref
	call(t, c, rLogin, map[string]string{"user": user}, &r)
	if r.PlayerID != user || r.Gateway != edgeGateway || r.Epoch != 2 {
		t.Fatalf("login %s: %+v", user, r)
	}
	return r
}

// transcript is one raw connection read and written like a transcript:
// send frames, expect the next one, expect nothing for a while, expect the
// end. Each expectation has a deadline; a failure prints what arrived.
type transcript struct {
	t     testing.TB
	name  string
	nc    net.Conn
	br    *bufio.Reader
	codec envelope.Codec // decodes the gateway's frames, encodes ours
	seen  []string
}

// raw dials a listener for a transcript, closed at cleanup.
func (e *edgeServer) raw(t testing.TB, listener string) *transcript {
	t.Helper()
	env := listener
	if listener == "spin" {
		env = "idlen"
	}
	nc, err := net.DialTimeout("tcp", e.addr(listener), patience)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := envelope.New(env, envelope.FromServer, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &transcript{t: t, name: listener, nc: nc, br: bufio.NewReader(nc), codec: codec}
}

// send writes frames in one write.
func (w *transcript) send(frames ...envelope.Frame) {
	w.t.Helper()
	var buf []byte
	for i := range frames {
		var err error
		if buf, err = w.codec.AppendFrame(buf, &frames[i]); err != nil {
			w.t.Fatalf("%s: encode %+v: %v", w.name, frames[i], err)
		}
	}
	w.write(buf)
}

func (w *transcript) write(b []byte) {
	w.t.Helper()
	w.nc.SetWriteDeadline(time.Now().Add(patience))
	if _, err := w.nc.Write(b); err != nil {
		w.t.Fatalf("%s: write: %v", w.name, err)
	}
}

// next reads one frame within the deadline.
func (w *transcript) next() (envelope.Frame, error) {
	w.nc.SetReadDeadline(time.Now().Add(patience))
	f, err := w.codec.ReadFrame(w.br)
	if err == nil {
		w.seen = append(w.seen, fmt.Sprintf("{%v route=%d id=%d code=%q body=%.80s}", f.Kind, f.RouteID, f.RequestID, f.Code, f.Body))
	}
	return f, err
}

// expect reads the next frame and checks it: Kind always; RouteID,
// RequestID, Code and Body when want sets them.
func (w *transcript) expect(want envelope.Frame) envelope.Frame {
	w.t.Helper()
	f, err := w.next()
	if err != nil {
		w.t.Fatalf("%s: want %v, got error %v; seen %v", w.name, want.Kind, err, w.seen)
	}
	if f.Kind != want.Kind || want.RouteID != 0 && f.RouteID != want.RouteID ||
		want.RequestID != 0 && f.RequestID != want.RequestID || want.Code != "" && f.Code != want.Code ||
		want.Body != nil && string(f.Body) != string(want.Body) {
		w.t.Fatalf("%s: want {%v route=%d id=%d code=%q body=%s}, got the last of %v",
			w.name, want.Kind, want.RouteID, want.RequestID, want.Code, want.Body, w.seen)
	}
	return f
}

// expectNothing checks that no byte arrives within d.
func (w *transcript) expectNothing(d time.Duration) {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(d))
	_, err := w.br.Peek(1)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		w.t.Fatalf("%s: want nothing for %v, got %v; seen %v", w.name, d, err, w.seen)
	}
}

// expectClosed checks that the connection ends with no frame before.
func (w *transcript) expectClosed() {
	w.t.Helper()
	f, err := w.next()
	if err == nil {
		w.t.Fatalf("%s: want the connection closed, got %+v; seen %v", w.name, f, w.seen)
	}
	if !peerGone(err) {
		w.t.Fatalf("%s: want the connection closed, got %v; seen %v", w.name, err, w.seen)
	}
}

// peerGone reports whether err is the gateway ending the connection: a
// FIN, or a reset when it closed with our bytes unread.
func peerGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// logSink is a slog.Handler keeping every record, so a test sees what the
// Lua service logged (shield.log) and in which order.
type logSink struct {
	mu      sync.Mutex // guards entries
	entries []logEntry
}

type logEntry struct {
	msg   string
	attrs map[string]string
}

// sinkView is the sink with the attributes of a Logger.With.
type sinkView struct {
	sink  *logSink
	attrs []slog.Attr
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(ctx context.Context, r slog.Record) error {
	return sinkView{sink: s}.Handle(ctx, r)
}
func (s *logSink) WithAttrs(as []slog.Attr) slog.Handler { return sinkView{sink: s, attrs: as} }
func (s *logSink) WithGroup(string) slog.Handler         { return s }

func (v sinkView) Enabled(context.Context, slog.Level) bool { return true }
func (v sinkView) Handle(_ context.Context, r slog.Record) error {
	e := logEntry{msg: r.Message, attrs: map[string]string{}}
	for _, a := range v.attrs {
		e.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		e.attrs[a.Key] = a.Value.String()
		return true
	})
	v.sink.mu.Lock()
	v.sink.entries = append(v.sink.entries, e)
	v.sink.mu.Unlock()
	return nil
}
func (v sinkView) WithAttrs(as []slog.Attr) slog.Handler {
	return sinkView{sink: v.sink, attrs: append(append([]slog.Attr(nil), v.attrs...), as...)}
}
func (v sinkView) WithGroup(string) slog.Handler { return v }

// find returns the index of the first entry with msg whose attributes hold
// every key/value pair of kv, or -1.
func (s *logSink) find(msg string, kv ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
next:
	for i, e := range s.entries {
		if e.msg != msg {
			continue
		}
		for j := 0; j+1 < len(kv); j += 2 {
			if e.attrs[kv[j]] != kv[j+1] {
				continue next
			}
		}
		return i
	}
	return -1
}

// count is the number of entries find would match.
func (s *logSink) count(msg string, kv ...string) int {
	s.mu.Lock()
	entries := append([]logEntry(nil), s.entries...)
	s.mu.Unlock()
	n := 0
next:
	for _, e := range entries {
		if e.msg != msg {
			continue
		}
		for j := 0; j+1 < len(kv); j += 2 {
			if e.attrs[kv[j]] != kv[j+1] {
				continue next
			}
		}
		n++
	}
	return n
}

// waitFor polls until an entry matches and returns its index.
func (s *logSink) waitFor(t testing.TB, msg string, kv ...string) int {
	t.Helper()
	i := -1
	eventually(t, fmt.Sprintf("log %q %v", msg, kv), func() bool {
		i = s.find(msg, kv...)
		return i >= 0
	})
	return i
}

func (s *logSink) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, e := range s.entries {
		fmt.Fprintf(&b, "  %s %v\n", e.msg, e.attrs)
	}
	return b.String()
}

// requestsTotal reads shield_requests_total{service,route,code}.
func requestsTotal(e *edgeServer, service, route, code string) float64 {
	return testutil.ToFloat64(e.srv.Metrics.Requests.WithLabelValues(service, route, code))
}
