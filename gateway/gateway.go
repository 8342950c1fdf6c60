// Package gateway is Shield's network half: listeners, one read loop and
// one write loop per connection, and the egress.Sink that services answer,
// push, bind and kick through (SPEC §3, §4, §7). It never decodes a body:
// the edge table is package ingress's, the egress table package egress's,
// and the sessions package session's; the gateway wires them to sockets.
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/session"
	"github.com/shieldrpc/shield/tracing"
)

// Services is what the gateway needs of the services behind it: the
// service runtime in one process (*service.Runtime), the cluster
// transport across nodes. None of its methods blocks.
type Services interface {
	// Deliver puts a client frame on its target's business lane, or
	// refuses it: busy (lane full), unavailable (no running VM, no live
	// host). A frame it takes is no longer the gateway's: whoever answers
	// it may give it back for reuse (ingress.ClientIngress.Release).
	Deliver(target egress.ActorID, in *ingress.ClientIngress) *codes.Error
	// Control puts a session lifecycle message (ingress.Bound, Suspended,
	// Resumed, Disconnected) on its target's control lane; it is never
	// dropped.
	Control(target egress.ActorID, m any)
	// Entry is a new session's first target on a listener whose
	// entry_service is service (SPEC §4).
	Entry(service string, sessionID uint64) (egress.ActorID, *codes.Error)
	// Crowded reports whether target's control lane is at its limit: the
	// gateway then adds nothing to it that it may refuse (a new session,
	// a resume, a bind, a suspension), so that the lane, which never
	// drops, stays bounded.
	Crowded(target egress.ActorID) bool
}

// Options are a Gateway's dependencies.
type Options struct {
	Config   *config.Config
	Table    *descriptor.Table
	Services Services
	Metrics  *metrics.Metrics // nil: a private set
	Logger   *slog.Logger     // nil: slog.Default()
	Tracer   *tracing.Tracer  // nil: tracing off (docs/tracing.md)
}

// Gateway serves every listener of a config.
type Gateway struct {
	cfg      *config.Config
	name     string
	edge     atomic.Pointer[descriptor.Edge] // swapped whole by a reload
	svc      Services
	m        *metrics.Metrics
	log      *slog.Logger
	sessions *session.Registry
	policy   session.Policy
	limits   session.Limits
	tr       *tracing.Tracer // nil: tracing off
	hold     atomic.Bool     // answer every frame unavailable (Hold)
	traces   traces          // traced requests awaiting their answer's write (trace.go)

	live      atomic.Int64 // connections and suspended sessions, for max_sessions
	listeners []*listener

	mu       sync.Mutex // guards draining
	draining bool
	accepts  sync.WaitGroup // accept loops (for ws: the HTTP servers' Serve)
	conns    sync.WaitGroup // connection goroutines, and parked connections
	parks    parker         // the parked connections (park.go)
	writers  writers        // the push writers (writers.go)

	// stop ends when the gateway stops accepting: TLS handshakes in
	// progress are abandoned then.
	stop       context.Context
	cancelStop context.CancelFunc
}

var _ egress.Sink = (*Gateway)(nil)

// New builds a gateway; Listen and Serve start it.
func New(o Options) (*Gateway, error) {
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	sc := &o.Config.Session
	g := &Gateway{
		cfg:      o.Config,
		name:     o.Config.Node.Name,
		svc:      o.Services,
		m:        o.Metrics,
		log:      o.Logger,
		tr:       o.Tracer,
		sessions: session.NewRegistry(),
		limits:   session.Limits{MaxInflight: sc.MaxInflight, Outbound: sc.OutboundQueue, OutboundBytes: sc.OutboundQueueBytes},
	}
	g.edge.Store(o.Table.Edge())
	g.stop, g.cancelStop = context.WithCancel(context.Background())
	g.policy = session.Policy{KickOld: sc.DuplicateLogin == "kick_old", Bound: g.bound, Published: g.published}
	for i := range o.Config.Network.Listeners {
		l, err := newListener(&o.Config.Network.Listeners[i], sc)
		if err != nil {
			return nil, err
		}
		g.listeners = append(g.listeners, l)
	}
	return g, nil
}

// SetTable makes t the route table frames are checked against, at once
// and atomically (a reload, SPEC §12): a frame is judged whole by one
// table or the other.
func (g *Gateway) SetTable(t *descriptor.Table) { g.edge.Store(t.Edge()) }

// Hold, on, makes the gateway answer every request client_rpc.unavailable
// (and drop every notify, counted) without judging it further: a cluster
// node does so until its start-up checks have passed (SPEC §10), while
// /readyz says not ready. Off, frames are served again.
func (g *Gateway) Hold(on bool) { g.hold.Store(on) }

// Name is the node name carried in every ClientRef.
func (g *Gateway) Name() string { return g.name }

// Sessions is the live session registry.
func (g *Gateway) Sessions() *session.Registry { return g.sessions }

// Listen binds every listener's address. It is separate from Serve so
// that a caller (or a test using port 0) can read the addresses first.
func (g *Gateway) Listen() error {
	for _, l := range g.listeners {
		ln, err := net.Listen("tcp", l.cfg.Address)
		if err != nil {
			g.closeListeners()
			return fmt.Errorf("gateway: listener %q: %w", l.cfg.Name, err)
		}
		l.ln = ln
		if l.cfg.Transport == "ws" {
			l.http = g.newWSServer(l)
			// SPEC §3: an empty allowed_origins makes no Origin check, on
			// any address. Say so where it matters: any web page a
			// player visits can then open a session to this listener.
			if len(l.cfg.AllowedOrigins) == 0 && !loopback(ln.Addr()) {
				g.log.Warn("ws listener accepts upgrades from any web origin; set allowed_origins to restrict it",
					"listener", l.cfg.Name, "address", ln.Addr().String())
			}
		}
	}
	return nil
}

// Addr returns the bound address of the named listener, or nil.
func (g *Gateway) Addr(name string) net.Addr {
	for _, l := range g.listeners {
		if l.cfg.Name == name && l.ln != nil {
			return l.ln.Addr()
		}
	}
	return nil
}

// Serve starts accepting on every listener and returns at once.
func (g *Gateway) Serve() {
	g.writers.start()
	for _, l := range g.listeners {
		g.accepts.Add(1)
		switch l.cfg.Transport {
		case "ws":
			go func() {
				defer g.accepts.Done()
				// Serve returns http.ErrServerClosed once StopAccepting
				// closed the server; admit retries every other error.
				_ = l.http.Serve(&admitListener{Listener: l.ln, g: g, l: l})
			}()
		default:
			go g.acceptLoop(l)
		}
	}
}

// closeListeners closes every bound listener; a ws listener's HTTP server
// also closes the connections still in their handshakes (upgraded ones are
// no longer its own).
func (g *Gateway) closeListeners() {
	for _, l := range g.listeners {
		if l.ln != nil {
			l.ln.Close()
		}
		if l.http != nil {
			l.http.Close()
		}
	}
}

// isDraining reports whether the drain has begun.
func (g *Gateway) isDraining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining
}

// StopAccepting begins the drain (SPEC §9): the listeners close and their
// accept loops end, every live session gets the gateway.drain_started
// status frame with grace_ms, and every suspended one ends. Live sessions
// go on.
func (g *Gateway) StopAccepting() {
	g.mu.Lock()
	already := g.draining
	g.draining = true
	g.mu.Unlock()
	g.cancelStop()
	g.closeListeners()
	g.accepts.Wait()
	if already {
		return
	}
	heads := &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDrainStarted),
		GraceMS: g.cfg.Session.ShutdownGrace.Milliseconds()}
	for _, s := range g.sessions.All() {
		if s.Suspended() {
			// Nobody is there to move elsewhere: a drain ends a
			// suspended session at once (SPEC §4 Resume).
			s.Close(session.Draining, nil)
			continue
		}
		s.Status(heads)
	}
}

// Idle reports whether no session is left; the drain waits for it.
func (g *Gateway) Idle() bool { return g.sessions.Len() == 0 }

// CloseAll ends the drain: every session left gets the gateway.draining
// notice and is closed (a suspended one at once), and CloseAll returns
// when every connection goroutine and push writer has exited.
func (g *Gateway) CloseAll() {
	for _, s := range g.sessions.All() {
		s.Close(session.Draining, drainNotice())
	}
	g.conns.Wait()
	g.parks.stop()    // no connection is left parked
	g.writers.close() // no connection is left to write for
}

// Shutdown drains: StopAccepting, then live sessions go on until they
// leave or ctx ends, then CloseAll.
func (g *Gateway) Shutdown(ctx context.Context) {
	g.StopAccepting()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !g.Idle() {
		select {
		case <-ctx.Done():
			g.CloseAll()
			return
		case <-tick.C:
		}
	}
	g.CloseAll()
}

func drainNotice() *envelope.Frame {
	return &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDraining), Message: "the gateway is shutting down"}
}

// acceptLoop accepts a tcp listener's connections until it closes. Each
// runs on a goroutine of its own: a TLS handshake first (with its own
// deadline), then the session.
func (g *Gateway) acceptLoop(l *listener) {
	defer g.accepts.Done()
	for {
		nc, err := g.admit(l)
		if err != nil {
			return
		}
		g.conns.Add(1)
		go func() {
			defer g.conns.Done()
			if l.tls != nil {
				tc, ok := g.tlsHandshake(l, nc)
				if !ok {
					g.live.Add(-1)
					return
				}
				nc = tc
			}
			g.serve(l, newStreamConn(nc, l.framer))
		}()
	}
}

// admit accepts the next connection the gateway has room for and counts it
// in g.live; whoever ends it gives the slot back. An accept error such as
// running out of file descriptors backs off and retries, as net/http does:
// it must not stop a listener (SPEC §9). A connection over max_sessions is
// closed at once and counted. admit returns an error only when the listener
// is closed.
func (g *Gateway) admit(l *listener) (net.Conn, error) {
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			g.m.AcceptErrors.Inc()
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			g.log.Warn("accept failed; retrying", "listener", l.cfg.Name, "error", err, "backoff", backoff)
			// The back-off gives way to StopAccepting, which waits for
			// this loop: a drain must not sit out a second of it.
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-g.stop.Done():
				t.Stop()
				return nil, net.ErrClosed
			}
			continue
		}
		if !g.takeSlot() {
			g.m.SessionsRefused.Inc()
			g.m.LimitsHit.WithLabelValues("max_sessions").Inc()
			nc.Close()
			continue
		}
		return nc, nil
	}
}

// takeSlot counts one more connection in g.live unless max_sessions are
// live already. Every listener's accept loop admits concurrently, so the
// check and the increment are one compare-and-swap: a load followed by an
// add would let two listeners pass the limit together.
func (g *Gateway) takeSlot() bool {
	limit := int64(g.cfg.Session.MaxSessions)
	for {
		n := g.live.Load()
		if n >= limit {
			return false
		}
		if g.live.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// listener is one configured listener and its wire profile.
type listener struct {
	cfg     *config.Listener
	ln      net.Listener     // the bound TCP socket, whatever the transport
	http    *http.Server     // ws only: serves the upgrades
	tls     *tls.Config      // nil: no tls: block
	framer  envelope.Framer  // decodes client frames; encodes the gateway's
	profile *session.Profile // what its sessions are written with
	unwrap  bool             // header envelope + json body: SPEC §3 tolerance applies
	// authFramer decodes a frame while its session has no player_id, with
	// session.auth_max_frame_bytes as the cap (SPEC §3); framer itself
	// when that is no lower.
	authFramer envelope.Framer
}

func newListener(lc *config.Listener, sc *config.Session) (*listener, error) {
	switch lc.Transport {
	case "tcp", "ws":
	default:
		return nil, fmt.Errorf("gateway: listener %q: unknown transport %q", lc.Name, lc.Transport)
	}
	framer, err := envelope.New(lc.Protocol.Envelope, envelope.FromClient, lc.Protocol.MaxFrameBytes)
	if err != nil {
		return nil, fmt.Errorf("gateway: listener %q: %w", lc.Name, err)
	}
	tc, err := TLSConfig(lc)
	if err != nil {
		return nil, fmt.Errorf("gateway: listener %q: %w", lc.Name, err)
	}
	authFramer := framer
	if n := sc.AuthFrameLimit(lc.Protocol.MaxFrameBytes); n < lc.Protocol.MaxFrameBytes {
		if authFramer, err = envelope.New(lc.Protocol.Envelope, envelope.FromClient, n); err != nil {
			return nil, fmt.Errorf("gateway: listener %q: session.auth_max_frame_bytes: %w", lc.Name, err)
		}
	}
	return &listener{cfg: lc, framer: framer, tls: tc, authFramer: authFramer,
		unwrap: !framer.Legacy() && lc.Protocol.Body == "json",
		profile: &session.Profile{Listener: lc.Name, Framer: framer, MaxFrameBytes: lc.Protocol.MaxFrameBytes,
			CodecKey: lc.BodyCodecKey()}}, nil
}
