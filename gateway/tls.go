package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/shieldrpc/shield/config"
)

// TLSConfig builds a listener's server-side TLS configuration from its
// tls: block (SPEC §3, Transports): TLS 1.2 or newer, the certificate and
// key from cert_file and key_file, and with client_ca_file, mutual TLS: a
// client must present a certificate that CA signed or the handshake fails.
// It returns nil, nil for a listener without tls:. The files were resolved
// against the config's folder by config.Load; an error names the file.
// A ws listener advertises only http/1.1 over ALPN, because a WebSocket
// upgrade needs HTTP/1.1.
func TLSConfig(l *config.Listener) (*tls.Config, error) {
	t := l.TLS
	if t == nil {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: cert_file %s, key_file %s: %w", t.CertFile, t.KeyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: client_ca_file %s: no PEM certificate in it", t.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if l.Transport == "ws" {
		cfg.NextProtos = []string{"http/1.1"}
	}
	return cfg, nil
}

// tlsHandshake runs the server side of a TLS handshake on a freshly
// accepted connection, before any session exists for it, within the
// listener's handshake_timeout: a client that connects and says nothing
// holds its max_sessions slot no longer than that. A gateway that stops
// accepting interrupts the handshakes in progress (g.stop). On failure the
// connection is closed and the failure logged at debug level: scanners and
// clients with a wrong certificate are routine on a public port.
func (g *Gateway) tlsHandshake(l *listener, nc net.Conn) (*tls.Conn, bool) {
	tc := tls.Server(nc, l.tls)
	ctx, cancel := context.WithTimeout(g.stop, l.cfg.HandshakeTimeout)
	defer cancel()
	// The deadline backs the context up: HandshakeContext stops reading
	// when ctx ends, the deadline makes sure a blocked write stops too.
	_ = nc.SetDeadline(time.Now().Add(l.cfg.HandshakeTimeout))
	err := tc.HandshakeContext(ctx)
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			g.m.LimitsHit.WithLabelValues("handshake_timeout").Inc()
		}
		g.log.Debug("TLS handshake failed", "listener", l.cfg.Name, "remote", nc.RemoteAddr().String(), "error", err)
		nc.Close()
		return nil, false
	}
	return tc, true
}
