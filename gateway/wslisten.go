package gateway

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// A ws listener is an http.Server of its own on the listener's address. It
// accepts through admitListener, so that max_sessions and the accept
// back-off apply as they do for tcp, and every accepted connection must
// finish its handshakes (TLS, when the listener has tls:, then the HTTP
// upgrade) within handshake_timeout of its accept, or a watchdog closes it.
// Only an upgrade at the listener's path is taken (anything else is 404),
// with the Origin check of allowed_origins. The handler then runs the
// session's read loop on the connection's goroutine, as the tcp listener's
// goroutine does.

// The states of an admitted connection.
const (
	pending  int32 = iota // accepted; handshakes in progress
	upgraded              // a WebSocket now: the session's
	expired               // the watchdog closed it
)

// admitted is a connection a ws listener accepted and counted in
// Gateway.live, which it leaves when closed, whoever closes it: the HTTP
// server (a refused or failed handshake), the watchdog, or the session's
// teardown once it is a WebSocket.
type admitted struct {
	net.Conn
	g     *Gateway
	state atomic.Int32

	mu       sync.Mutex // guards watchdog, which expire may read as soon as it is set
	watchdog *time.Timer
	once     sync.Once
}

// admitListener is the net.Listener a ws listener's http.Server accepts from.
type admitListener struct {
	net.Listener
	g *Gateway
	l *listener
}

// Accept returns the next connection the gateway has room for, wrapped in
// TLS when the listener has tls: (the handshake runs on the HTTP server's
// first read), and in a frameWatch over the plaintext.
func (a *admitListener) Accept() (net.Conn, error) {
	nc, err := a.g.admit(a.l)
	if err != nil {
		return nil, err
	}
	c := &admitted{Conn: nc, g: a.g}
	c.mu.Lock()
	c.watchdog = time.AfterFunc(a.l.cfg.HandshakeTimeout, c.expire)
	c.mu.Unlock()
	var plain net.Conn = c
	if a.l.tls != nil {
		plain = tls.Server(c, a.l.tls)
	}
	return &frameWatch{Conn: plain, limit: int64(a.l.cfg.Protocol.MaxFrameBytes)}, nil
}

// expire closes a connection whose handshakes did not finish in time.
func (c *admitted) expire() {
	if c.state.CompareAndSwap(pending, expired) {
		c.g.m.LimitsHit.WithLabelValues("handshake_timeout").Inc()
		c.g.log.Debug("handshake not done within handshake_timeout; closed", "remote", c.RemoteAddr().String())
		c.Close()
	}
}

// upgrade claims the connection for a session; false when the watchdog
// closed it first.
func (c *admitted) upgrade() bool {
	if !c.state.CompareAndSwap(pending, upgraded) {
		return false
	}
	c.mu.Lock()
	c.watchdog.Stop()
	c.mu.Unlock()
	return true
}

// Close closes the connection and, unless it was upgraded, gives its
// max_sessions slot back, once. An upgraded connection's slot is its
// session's (serve gives it back, or hands it to the session when it is
// suspended).
func (c *admitted) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		c.watchdog.Stop()
		c.mu.Unlock()
		if c.state.Load() != upgraded {
			c.g.live.Add(-1)
		}
	})
	return c.Conn.Close()
}

// connKey is the context key under which a request finds its connection.
type connKey struct{}

// newWSServer builds the HTTP server of a ws listener. The watchdog of
// admitListener owns handshake_timeout: it alone closes a connection whose
// handshakes are late, and counts it. The server's own timeouts (which
// also bound its TLS handshake) are only a backstop, set well after the
// watchdog: at handshake_timeout as well, they raced it, and a connection
// the server closed first was closed uncounted. They end with the upgrade,
// when the connection leaves the server (it is hijacked).
func (g *Gateway) newWSServer(l *listener) *http.Server {
	backstop := 2 * l.cfg.HandshakeTimeout
	return &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.upgrade(l, w, r) }),
		ReadHeaderTimeout: backstop,
		IdleTimeout:       backstop,
		MaxHeaderBytes:    16 << 10, // an upgrade request is a few hundred bytes
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
	}
}

// upgrade serves one HTTP request on a ws listener: the upgrade at the
// listener's path becomes a session, served on this goroutine until it
// ends; anything else gets an error status and the connection is closed.
func (g *Gateway) upgrade(l *listener, w http.ResponseWriter, r *http.Request) {
	// Refusals close the connection: a client gets one try per
	// connection. A successful upgrade replaces this header.
	w.Header().Set("Connection", "close")
	if r.URL.Path != l.cfg.Path {
		http.NotFound(w, r)
		return
	}
	if !hasToken(r.Header, "Connection", "upgrade") || !hasToken(r.Header, "Upgrade", "websocket") {
		// coder/websocket would answer this too, but keep the
		// connection open for another request.
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "a WebSocket upgrade is required here", http.StatusUpgradeRequired)
		return
	}
	if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
		// An upgrade is a GET without a body (RFC 6455 §4.1). Refused
		// before the upgrade, the server never reads one inside the
		// handler, and no byte of it can be taken for a frame.
		http.Error(w, "an upgrade request has no body", http.StatusBadRequest)
		return
	}
	if !originAllowed(l.cfg.AllowedOrigins, r.Header) {
		g.log.Debug("WebSocket upgrade refused: origin not allowed", "listener", l.cfg.Name,
			"remote", r.RemoteAddr, "origin", truncate(r.Header.Get("Origin"), 64))
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	raw, _ := r.Context().Value(connKey{}).(*frameWatch)
	ac := admittedOf(raw)
	if ac == nil {
		http.Error(w, "internal error", http.StatusInternalServerError) // not from admitListener: cannot happen
		return
	}
	// The session is counted in g.conns before the gateway can start
	// waiting for them: a drain that has begun refuses the upgrade.
	g.mu.Lock()
	if g.draining {
		g.mu.Unlock()
		http.Error(w, "the gateway is shutting down", http.StatusServiceUnavailable)
		return
	}
	g.conns.Add(1)
	g.mu.Unlock()
	defer g.conns.Done()

	// The Origin check is ours (exact strings, SPEC §3): InsecureSkipVerify
	// turns off the library's own same-host rule. No compression: frames
	// are small and deflate state would cost memory per session.
	ws, err := websocket.Accept(hijackWatch{w, raw}, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		g.log.Debug("WebSocket upgrade failed", "listener", l.cfg.Name, "remote", r.RemoteAddr, "error", err)
		return // Accept wrote the response
	}
	if !ac.upgrade() {
		ws.CloseNow()
		return
	}
	raw.watch()
	g.serve(l, newWSConn(ws, raw, l.framer, l.cfg.Protocol.MaxFrameBytes))
}

// admittedOf finds the admitted connection under w (under TLS, w wraps
// the TLS connection, which wraps it).
func admittedOf(w *frameWatch) *admitted {
	if w == nil {
		return nil
	}
	c := w.Conn
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	ac, _ := c.(*admitted)
	return ac
}

// originAllowed applies allowed_origins (SPEC §3): with a list, the Origin
// header must be exactly one of its values; a request without one (a
// native client) passes, and so does any request when the list is empty.
// Several Origin headers are refused: a browser sends one.
func originAllowed(allowed []string, h http.Header) bool {
	if len(allowed) == 0 {
		return true
	}
	origins := h.Values("Origin")
	switch len(origins) {
	case 0:
		return true
	case 1:
		return slices.Contains(allowed, origins[0])
	default:
		return false
	}
}

// hasToken reports whether a comma-separated header holds token, in any case.
func hasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// loopback reports whether addr is on a loopback address.
func loopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
