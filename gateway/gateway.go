// Package gateway is Shield's network half: listeners, one read loop and
// one write loop per connection, edge validation (SPEC §5), and the
// egress.Gateway that services answer, push, bind and kick through
// (SPEC §4 and §7). It never decodes a body.
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
)

// Services is what the gateway needs of the service runtime
// (*service.Runtime implements it).
type Services interface {
	Deliver(target egress.ActorID, in *ingress.ClientIngress) *codes.Error
	Disconnect(target egress.ActorID, d *ingress.Disconnected)
	Pick(service, key string) (egress.ActorID, *codes.Error)
	Entry(service string, sessionID uint64) (egress.ActorID, *codes.Error)
}

// Options are a Gateway's dependencies.
type Options struct {
	Config   *config.Config
	Table    *descriptor.Table
	Services Services
	Metrics  *metrics.Metrics // nil: a private set
	Logger   *slog.Logger     // nil: slog.Default()
}

// Gateway serves every listener of a config.
type Gateway struct {
	cfg      *config.Config
	name     string
	edge     *descriptor.Edge
	svc      Services
	m        *metrics.Metrics
	log      *slog.Logger
	sessions *session.Table
	policy   session.BindPolicy
	// codecKeys maps a listener (a session's Binding.Profile) to its body
	// codec key, to pick a push's body.
	codecKeys map[string]string

	nextID    atomic.Uint64
	live      atomic.Int64 // connections being served, for max_sessions
	listeners []*listener

	mu       sync.Mutex // guards draining
	draining bool
	accepts  sync.WaitGroup // accept loops (for ws: the HTTP servers' Serve)
	conns    sync.WaitGroup // connection goroutines

	// stop ends when the gateway stops accepting: TLS handshakes in
	// progress are abandoned then.
	stop       context.Context
	cancelStop context.CancelFunc
}

var _ egress.Gateway = (*Gateway)(nil)

// New builds a gateway; Listen and Serve start it.
func New(o Options) (*Gateway, error) {
	if o.Metrics == nil {
		o.Metrics = metrics.New()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	g := &Gateway{
		cfg:      o.Config,
		name:     o.Config.Node.Name,
		edge:     o.Table.Edge(),
		svc:      o.Services,
		m:        o.Metrics,
		log:      o.Logger,
		sessions: session.NewTable(),
	}
	g.stop, g.cancelStop = context.WithCancel(context.Background())
	g.policy = session.BindPolicy{KickOld: o.Config.Session.DuplicateLogin == "kick_old", Pick: o.Services.Pick}
	g.codecKeys = map[string]string{}
	for i := range o.Config.Network.Listeners {
		lc := &o.Config.Network.Listeners[i]
		g.codecKeys[lc.Name] = BodyCodecKey(lc)
		codec, err := envelope.New(lc.Protocol.Envelope, envelope.FromClient, lc.Protocol.MaxFrameBytes)
		if err != nil {
			return nil, fmt.Errorf("gateway: listener %q: %w", lc.Name, err)
		}
		switch lc.Transport {
		case "tcp", "ws":
		default:
			return nil, fmt.Errorf("gateway: listener %q: unknown transport %q", lc.Name, lc.Transport)
		}
		tc, err := TLSConfig(lc)
		if err != nil {
			return nil, fmt.Errorf("gateway: listener %q: %w", lc.Name, err)
		}
		g.listeners = append(g.listeners, &listener{cfg: lc, codec: codec, bodyCodec: BodyCodecKey(lc),
			unwrap: !codec.Legacy() && lc.Protocol.Body == "json", tls: tc})
	}
	return g, nil
}

// Name is the node name carried in every ClientRef.
func (g *Gateway) Name() string { return g.name }

// Sessions is the live session table.
func (g *Gateway) Sessions() *session.Table { return g.sessions }

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

// StopAccepting closes the listeners and waits for their accept loops.
// Live sessions go on.
func (g *Gateway) StopAccepting() {
	g.mu.Lock()
	g.draining = true
	g.mu.Unlock()
	g.cancelStop()
	g.closeListeners()
	g.accepts.Wait()
}

// Shutdown stops accepting, lets live sessions go on until they leave or
// ctx ends, then closes the rest with a gateway.draining notice, and
// returns when every connection goroutine has exited.
func (g *Gateway) Shutdown(ctx context.Context) {
	g.StopAccepting()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for g.sessions.Len() > 0 {
		select {
		case <-ctx.Done():
			goto closeAll
		case <-tick.C:
		}
	}
closeAll:
	for _, s := range g.sessions.All() {
		s.Close(session.Draining, &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDraining), Message: "the gateway is shutting down"})
	}
	g.conns.Wait()
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
			defer g.live.Add(-1)
			if l.tls != nil {
				tc, ok := g.tlsHandshake(l, nc)
				if !ok {
					return
				}
				nc = tc
			}
			g.serve(l, newStreamConn(nc, l.codec))
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
	cfg       *config.Listener
	ln        net.Listener   // the bound TCP socket, whatever the transport
	http      *http.Server   // ws only: serves the upgrades
	tls       *tls.Config    // nil: no tls: block
	codec     envelope.Codec // decodes client frames; encodes the gateway's
	bodyCodec string         // the key services look the body codec up by
	unwrap    bool           // header envelope + json body: SPEC §3 tolerance applies
}

// BodyCodecKey is the name under which a listener's body codec is
// registered (codec.Register) and which its ClientIngress carries: "json"
// and "raw" are shared; a protobuf codec belongs to its listener's
// descriptor set, so its key is "protobuf/<listener>".
func BodyCodecKey(l *config.Listener) string {
	if l.Protocol.Body == "protobuf" {
		return "protobuf/" + l.Name
	}
	return l.Protocol.Body
}
