// Package admin is the operators' HTTP server (SPEC §9): Prometheus
// /metrics, /healthz (the process is alive), /readyz (ready to take
// traffic: false while starting and while draining), optionally
// /debug/pprof/, and the example game's browser client at /play/ when the
// config has a ws listener it can speak to (see ServePlay).
package admin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the admin HTTP server.
type Server struct {
	ready atomic.Bool
	check atomic.Pointer[func() bool] // SetReadyCheck's condition; nil: none
	srv   *http.Server
	mux   *http.ServeMux // safe to add routes to while serving
	play  atomic.Value   // string: the listener /play/ plays on; "" without it
	ln    net.Listener
	done  chan struct{}
}

// New binds addr and starts serving at once: /healthz answers from the
// first moment, /readyz only after SetReady(true).
func New(addr string, reg *prometheus.Registry, withPProf bool) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	s := &Server{ln: ln, mux: mux, done: make(chan struct{})}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if withPProf {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed; Close still works
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// SetReady flips /readyz.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// SetReadyCheck adds a condition /readyz holds to besides SetReady: a
// cluster node is ready only while it reaches NATS (SPEC §10).
func (s *Server) SetReadyCheck(f func() bool) { s.check.Store(&f) }

// Ready is what /readyz answers.
func (s *Server) Ready() bool {
	if f := s.check.Load(); f != nil && !(*f)() {
		return false
	}
	return s.ready.Load()
}

// Close stops the server, waiting up to ctx for requests in progress.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
