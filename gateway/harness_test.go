package gateway_test

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
	"github.com/shieldrpc/shield/envelope"
)

// These tests run the real gateway in front of a real Lua service
// (testdata/wire.lua) and talk to it over loopback TCP with raw bytes.

// Routes of testdata/wire.lua.
const (
	routeEcho = 1
	routeFail = 2
	routeSink = 3 // action: drop
)

var envelopes = []string{"idlen", "typelen", "lenprefix", "delimiter"}

// maxFrame is every listener's max_frame_bytes: small, so that the limit
// is cheap to cross.
const maxFrame = 1024

// wait is the deadline of every expectation.
const wait = 5 * time.Second

func config(t testing.TB, session string) string {
	t.Helper()
	script, err := filepath.Abs("testdata/wire.lua")
	if err != nil {
		t.Fatal(err)
	}
	var listeners strings.Builder
	for _, e := range envelopes {
		fmt.Fprintf(&listeners, "    - {name: %s, address: \"127.0.0.1:0\", entry_service: wire, protocol: {envelope: %s, max_frame_bytes: %d}}\n", e, e, maxFrame)
	}
	return fmt.Sprintf(`node: {name: gw-wire}
network:
  listeners:
%s
session:
%s
actors:
  - name: wire
    script: %s
    rpc:
      routes:
        - {id: %d, name: echo, binding: echo, requires_auth: false}
        - {id: %d, name: fail, binding: fail, requires_auth: false}
        - {id: %d, name: sink, binding: echo, requires_auth: false, action: drop}
`, listeners.String(), session, script, routeEcho, routeFail, routeSink)
}

// server is a running gateway with the wire service.
type server struct {
	srv  *bootstrap.Server
	logs *logSink
}

// start starts a gateway; session holds the session block's keys, each
// indented two spaces. It is stopped, and goroutines checked, at cleanup.
func start(t testing.TB, session string) *server {
	t.Helper()
	before := runtime.NumGoroutine()
	if session == "" {
		session = "  idle_timeout: 60s"
	}
	path := filepath.Join(t.TempDir(), "shield.yaml")
	if err := os.WriteFile(path, []byte(config(t, session)), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, path, bootstrap.Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		waitGoroutines(t, before)
		if t.Failed() {
			t.Logf("server log:\n%s", logs.dump())
		}
	})
	return &server{srv: srv, logs: logs}
}

func (s *server) addr(listener string) string { return s.srv.Gateway.Addr(listener).String() }

func (s *server) protocolErrors(reason string) float64 {
	return testutil.ToFloat64(s.srv.Metrics.ProtocolErrors.WithLabelValues(reason))
}

func (s *server) closedTotal(reason string) float64 {
	return testutil.ToFloat64(s.srv.Metrics.SessionsClosed.WithLabelValues(reason))
}

// wire is one raw connection, read and written as a transcript: send a
// frame, expect the next one, expect nothing for a while, expect the end.
// Every expectation has a deadline, and a failure prints what arrived.
type wire struct {
	t     testing.TB
	name  string
	nc    net.Conn
	br    *bufio.Reader
	codec envelope.Codec // decodes the gateway's frames, encodes ours
	seen  []string       // what arrived, for failure messages
}

// dial connects to a listener, named after its envelope.
func (s *server) dial(t testing.TB, listener string) *wire {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.addr(listener), wait)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := envelope.New(listener, envelope.FromServer, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, name: listener, nc: nc, br: bufio.NewReader(nc), codec: codec}
}

// send encodes and writes frames, in one write.
func (w *wire) send(frames ...envelope.Frame) {
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

// write writes raw bytes.
func (w *wire) write(b []byte) {
	w.t.Helper()
	w.nc.SetWriteDeadline(time.Now().Add(wait))
	if _, err := w.nc.Write(b); err != nil {
		w.t.Fatalf("%s: write: %v", w.name, err)
	}
}

// halfClose ends what we send, so the gateway reads EOF, while we can
// still read what it says.
func (w *wire) halfClose() {
	w.t.Helper()
	if err := w.nc.(*net.TCPConn).CloseWrite(); err != nil {
		w.t.Fatal(err)
	}
}

// next reads the next frame within the deadline.
func (w *wire) next() (envelope.Frame, error) {
	w.nc.SetReadDeadline(time.Now().Add(wait))
	f, err := w.codec.ReadFrame(w.br)
	if err == nil {
		w.seen = append(w.seen, fmt.Sprintf("%+v", f))
	}
	return f, err
}

// expect reads the next frame and checks it against want: Kind always;
// RouteID, RequestID, Code and Body when set in want.
func (w *wire) expect(want envelope.Frame) envelope.Frame {
	w.t.Helper()
	f, err := w.next()
	if err != nil {
		w.t.Fatalf("%s: want %+v, got error %v; seen %v", w.name, want, err, w.seen)
	}
	if f.Kind != want.Kind || want.RouteID != 0 && f.RouteID != want.RouteID ||
		want.RequestID != 0 && f.RequestID != want.RequestID || want.Code != "" && f.Code != want.Code ||
		want.Body != nil && string(f.Body) != string(want.Body) {
		w.t.Fatalf("%s: want %+v, got %+v; seen %v", w.name, want, f, w.seen)
	}
	return f
}

// expectBytes reads exactly len(want) raw bytes and compares them.
func (w *wire) expectBytes(want []byte) {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len(want))
	if n, err := io.ReadFull(w.br, got); err != nil {
		w.t.Fatalf("%s: want % x, got % x then %v", w.name, want, got[:n], err)
	}
	if string(got) != string(want) {
		w.t.Fatalf("%s: want % x\n got % x", w.name, want, got)
	}
}

// expectNothing checks that no byte arrives within d.
func (w *wire) expectNothing(d time.Duration) {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(d))
	_, err := w.br.Peek(1)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		w.t.Fatalf("%s: want nothing for %v, got %v; seen %v", w.name, d, err, w.seen)
	}
}

// expectClosed checks that the gateway ends the connection, with no frame
// before the end.
func (w *wire) expectClosed() {
	w.t.Helper()
	f, err := w.next()
	if err == nil {
		w.t.Fatalf("%s: want the connection closed, got %+v", w.name, f)
	}
	if !closedErr(err) {
		w.t.Fatalf("%s: want the connection closed, got %v; seen %v", w.name, err, w.seen)
	}
}

// closedErr reports whether err is the peer ending the connection: a FIN,
// or a reset when it closed with our bytes unread.
func closedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// logSink is a slog.Handler that keeps every record, so a test can see
// what Lua logged (shield.log) and in which order.
type logSink struct {
	mu      sync.Mutex // guards entries
	entries []logEntry
}

type logEntry struct {
	msg   string
	attrs map[string]string
}

// sinkHandler is a logSink view with attributes added by With.
type sinkHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(ctx context.Context, r slog.Record) error {
	return sinkHandler{sink: s}.Handle(ctx, r)
}
func (s *logSink) WithAttrs(as []slog.Attr) slog.Handler { return sinkHandler{sink: s, attrs: as} }
func (s *logSink) WithGroup(string) slog.Handler         { return s }

func (h sinkHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h sinkHandler) Handle(_ context.Context, r slog.Record) error {
	e := logEntry{msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		e.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		e.attrs[a.Key] = a.Value.String()
		return true
	})
	h.sink.mu.Lock()
	h.sink.entries = append(h.sink.entries, e)
	h.sink.mu.Unlock()
	return nil
}
func (h sinkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return sinkHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}
func (h sinkHandler) WithGroup(string) slog.Handler { return h }

// find returns the index of the first entry with msg whose attributes
// include every key/value pair of kv, or -1.
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
	defer s.mu.Unlock()
	n := 0
next:
	for _, e := range s.entries {
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

// waitFor polls until an entry matches, and returns its index.
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

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("leaked goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
