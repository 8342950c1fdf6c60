package acceptance

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/certgen"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestMutualTLS: with client_ca_file, a client certificate the CA signed
// gets a session; a certificate from another CA, or none, is refused in
// the handshake and no session is made, over tcp and ws alike. Each
// transport has a server of its own, so that the sessions counted are that
// case's alone (another case's good client may not have left yet).
func TestMutualTLS(t *testing.T) {
	for _, l := range []tlistener{
		{transport: "tls", envelope: "idlen", mtls: true},
		{transport: "wss", envelope: "idlen", mtls: true},
	} {
		name := l.name()
		t.Run(name, func(t *testing.T) {
			s := startTransportEdge(t, "", l)
			c := s.dial(t, name)
			var got json2
			call(t, c, rEcho, map[string]int{"n": 1}, &got)

			rogue, err := certgen.ClientConfig(s.certs.CA, s.certs.RogueCert, s.certs.RogueKey)
			if err != nil {
				t.Fatal(err)
			}
			// Present it whatever CAs the server names (crypto/tls would
			// otherwise send none, which is the other case).
			pair := rogue.Certificates[0]
			rogue.Certificates = nil
			rogue.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
			anonymous, err := certgen.ClientConfig(s.certs.CA, "", "")
			if err != nil {
				t.Fatal(err)
			}
			for what, cfg := range map[string]*tls.Config{"a certificate of another CA": rogue, "no certificate": anonymous} {
				o := s.options(t, name)
				o.TLS = cfg
				c, err := s.dialWith(t, name, o)
				if err == nil {
					// TLS 1.3: the client's side of the handshake ends
					// before the server has checked its certificate; the
					// refusal arrives as the first read's alert.
					select {
					case <-c.Done():
						err = c.Err()
					case <-time.After(patience):
					}
				}
				if err == nil {
					t.Fatalf("%s: the connection was accepted", what)
				}
				t.Logf("%s: %v", what, err)
			}
			if n := s.Srv.Gateway.Sessions().Len(); n != 1 {
				t.Fatalf("%d sessions, want only the good client's", n)
			}
		})
	}
}

// TestTLSVersions: TLS 1.1 is refused; 1.2 and 1.3 are served, and the
// framing above TLS is the envelope's bytes as they are.
func TestTLSVersions(t *testing.T) {
	s := startTransportEdge(t, "", tlistener{transport: "tls", envelope: "idlen"})
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := s.clientTLS(t)
		cfg.MinVersion, cfg.MaxVersion = v, v
		tc, err := tls.Dial("tcp", s.Addr("tls_idlen"), cfg)
		if err != nil {
			t.Fatalf("%s: %v", tls.VersionName(v), err)
		}
		w := wiretest.NewConn(t, tls.VersionName(v), tc, wiretest.Codec(t, "idlen"))
		w.Write([]byte{0, 0, 0, 8, 1, 0, 0, 0, 0, 0, 0, 0}) // an idlen heartbeat, byte for byte
		w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
		tc.Close()
	}
	cfg := s.clientTLS(t)
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if tc, err := tls.Dial("tcp", s.Addr("tls_idlen"), cfg); err == nil {
		tc.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
}

// TestHandshakeTimeout: a connection that never finishes its handshakes is
// closed within handshake_timeout and counted, and while it waits it holds
// a max_sessions slot no longer: on tls, one that sends nothing; on ws, one
// that sends no HTTP request; on wss, one that finishes TLS but sends no
// request (the deadline covers both handshakes). Each case has a server of
// its own: the one max_sessions slot it watches is that case's alone, and
// a session another case left behind cannot hold it.
func TestHandshakeTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	extra := "handshake_timeout: 300ms"
	for _, tc := range []struct {
		listener tlistener
		tls      bool // finish the TLS handshake first
	}{
		{tlistener{transport: "tls", envelope: "idlen", extra: extra}, false},
		{tlistener{transport: "ws", envelope: "idlen", extra: extra}, false},
		{tlistener{transport: "wss", envelope: "idlen", extra: extra}, false},
		{tlistener{transport: "wss", envelope: "idlen", extra: extra}, true},
	} {
		name := tc.listener.name()
		if tc.tls {
			name += "/after_tls"
		}
		t.Run(name, func(t *testing.T) {
			s := startTransportEdge(t, "  max_sessions: 1", tc.listener)
			addr := s.Addr(tc.listener.name())
			start := time.Now()
			var nc net.Conn
			var err error
			if tc.tls {
				nc, err = tls.Dial("tcp", addr, s.clientTLS(t))
			} else {
				nc, err = net.Dial("tcp", addr)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			// The silent connection holds the only slot: another is
			// refused at accept.
			wiretest.Eventually(t, "the slot taken", func() bool { return refusedNow(t, addr) })

			nc.SetReadDeadline(time.Now().Add(patience))
			_, err = io.ReadAll(nc)
			took := time.Since(start)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("still open after %v", took)
			}
			// The lower bound is the point (not closed before its
			// time); the upper one only says it was closed at all.
			if took < timeout-50*time.Millisecond || took > timeout+3*time.Second {
				t.Fatalf("closed after %v, want about %v", took, timeout)
			}
			wiretest.Eventually(t, "handshake_timeout counted", func() bool { return s.LimitHits("handshake_timeout") == 1 })

			// The slot is free again, once the gateway has let go of the
			// connection it closed: the client may see the close a moment
			// before the slot is given back, and a dial in that moment is
			// refused at accept.
			var c *client.Client
			wiretest.Eventually(t, "the slot free again", func() bool {
				var err error
				c, err = s.dialWith(t, tc.listener.name(), s.options(t, tc.listener.name()))
				return err == nil
			})
			var got json2
			call(t, c, rEcho, map[string]int{"n": 1}, &got)
			c.Close()
			wiretest.Eventually(t, "the session gone", func() bool { return s.Srv.Gateway.Sessions().Len() == 0 })
		})
	}
}

// refusedNow reports whether a new connection to addr is closed at once
// (max_sessions reached) rather than left open for its handshake.
func refusedNow(t testing.TB, addr string) bool {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return true
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	_, err = nc.Read(make([]byte, 1))
	return !errors.Is(err, os.ErrDeadlineExceeded)
}
