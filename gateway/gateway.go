// Package gateway is Shield's network half: listeners, one read loop and
// one write loop per connection, edge validation (SPEC §5), and the
// egress.Gateway that services answer, push, bind and kick through
// (SPEC §4 and §7). It never decodes a body.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
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

	nextID    atomic.Uint64
	live      atomic.Int64 // connections being served, for max_sessions
	listeners []*listener

	mu       sync.Mutex // guards draining
	draining bool
	accepts  sync.WaitGroup // accept loops
	conns    sync.WaitGroup // connection goroutines
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
	g.policy = session.BindPolicy{KickOld: o.Config.Session.DuplicateLogin == "kick_old", Pick: o.Services.Pick}
	for i := range o.Config.Network.Listeners {
		lc := &o.Config.Network.Listeners[i]
		codec, err := envelope.New(lc.Protocol.Envelope, envelope.FromClient, lc.Protocol.MaxFrameBytes)
		if err != nil {
			return nil, fmt.Errorf("gateway: listener %q: %w", lc.Name, err)
		}
		g.listeners = append(g.listeners, &listener{cfg: lc, codec: codec, bodyCodec: BodyCodecKey(lc),
			unwrap: !codec.Legacy() && lc.Protocol.Body == "json"})
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
		if l.cfg.Transport != "tcp" || l.cfg.TLS != nil {
			g.closeListeners()
			return fmt.Errorf("gateway: listener %q: only plain tcp is served in this version", l.cfg.Name)
		}
		ln, err := net.Listen("tcp", l.cfg.Address)
		if err != nil {
			g.closeListeners()
			return fmt.Errorf("gateway: listener %q: %w", l.cfg.Name, err)
		}
		l.ln = ln
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
		go g.acceptLoop(l)
	}
}

func (g *Gateway) closeListeners() {
	for _, l := range g.listeners {
		if l.ln != nil {
			l.ln.Close()
		}
	}
}

// StopAccepting closes the listeners and waits for their accept loops.
// Live sessions go on.
func (g *Gateway) StopAccepting() {
	g.mu.Lock()
	g.draining = true
	g.mu.Unlock()
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

// acceptLoop accepts until its listener closes. An accept error backs off
// and retries, as net/http does: running out of file descriptors must not
// stop a listener.
func (g *Gateway) acceptLoop(l *listener) {
	defer g.accepts.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			g.m.AcceptErrors.Inc()
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			g.log.Warn("accept failed; retrying", "listener", l.cfg.Name, "error", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if g.live.Load() >= int64(g.cfg.Session.MaxSessions) {
			g.m.SessionsRefused.Inc()
			g.m.LimitsHit.WithLabelValues("max_sessions").Inc()
			nc.Close()
			continue
		}
		g.live.Add(1)
		g.conns.Add(1)
		go func() {
			defer g.conns.Done()
			defer g.live.Add(-1)
			g.serve(l, nc)
		}()
	}
}

// listener is one configured listener and its wire profile.
type listener struct {
	cfg       *config.Listener
	ln        net.Listener
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
