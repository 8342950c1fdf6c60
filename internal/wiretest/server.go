package wiretest

import (
	"context"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/bootstrap"
	itestutil "github.com/shieldrpc/shield/internal/testutil"
)

// Server is a running Shield server and, unless the test gave a logger of
// its own, what it logged.
type Server struct {
	Srv  *bootstrap.Server
	Logs *LogSink // nil when started with a logger

	mu      sync.Mutex // guards stopped
	stopped bool
}

// Start writes config to file in a new temporary folder and starts a
// server on it, logging to logger or, when that is nil, to a new LogSink
// (Logs). At cleanup the server is stopped unless the test stopped it,
// goroutines are checked, and if the test failed the log is printed.
func Start(t testing.TB, file, config string, logger *slog.Logger) *Server {
	t.Helper()
	before := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), file)
	itestutil.WriteFile(t, path, config)
	s := &Server{}
	if logger == nil {
		s.Logs = &LogSink{}
		logger = slog.New(s.Logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, path, bootstrap.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	s.Srv = srv
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		WaitGoroutines(t, before)
		if t.Failed() && s.Logs != nil {
			t.Logf("server log:\n%s", s.Logs.Dump())
		}
	})
	return s
}

// Stop drains the server once; later calls return nil.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Srv.Stop(ctx)
}

// Addr is the address a listener is bound to.
func (s *Server) Addr(listener string) string { return s.Srv.Gateway.Addr(listener).String() }

// The metrics the tests watch.

// ProtocolErrors reads shield_protocol_errors_total{reason}.
func (s *Server) ProtocolErrors(reason string) float64 {
	return testutil.ToFloat64(s.Srv.Metrics.ProtocolErrors.WithLabelValues(reason))
}

// ClosedTotal reads shield_sessions_closed_total{reason}.
func (s *Server) ClosedTotal(reason string) float64 {
	return testutil.ToFloat64(s.Srv.Metrics.SessionsClosed.WithLabelValues(reason))
}

// Dropped reads shield_edge_dropped_total{reason}.
func (s *Server) Dropped(reason string) float64 {
	return testutil.ToFloat64(s.Srv.Metrics.EdgeDropped.WithLabelValues(reason))
}

// EgressRejected reads shield_egress_rejected_total{reason}.
func (s *Server) EgressRejected(reason string) float64 {
	return testutil.ToFloat64(s.Srv.Metrics.EgressRejected.WithLabelValues(reason))
}

// LimitHits reads shield_limits_hit_total{limit}.
func (s *Server) LimitHits(limit string) float64 {
	return testutil.ToFloat64(s.Srv.Metrics.LimitsHit.WithLabelValues(limit))
}

// RequestsTotal reads shield_requests_total{service,route,code}.
func (s *Server) RequestsTotal(service, route, code string) float64 {
	return testutil.ToFloat64(s.Srv.Metrics.Requests.WithLabelValues(service, route, code))
}

// Eventually polls cond until it holds or Wait has passed.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitGoroutines fails t, with every goroutine's stack, if more than
// before goroutines still run once Wait has passed.
func WaitGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("leaked goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
