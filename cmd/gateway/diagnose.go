package main

import (
	"bufio"
	"crypto/tls"
	"net"
	"strings"
	"time"

	"github.com/shieldrpc/shield/client"
)

// diagnose says what is likely wrong when a gateway closed the connection
// before answering: the usual cause is a client that speaks something else
// than the listener (another envelope, plain TCP to a WebSocket or TLS
// port), which the gateway can only answer by closing. It probes the
// address the way each kind of listener answers: a TLS handshake, an HTTP
// request; and otherwise names the envelope.
func diagnose(addr string, o client.Options) string {
	const wait = 2 * time.Second
	if o.TLS == nil {
		d := &net.Dialer{Timeout: wait}
		if tc, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}); err == nil {
			tc.Close()
			return "the listener speaks TLS: add -tls (with -ca FILE, or -insecure for a test certificate)"
		}
	}
	if o.Transport != "ws" {
		if httpAnswers(addr, o.TLS, wait) {
			return "the listener is a WebSocket (HTTP) listener: add -ws (and -path if it is not /ws)"
		}
	}
	return "the gateway closed the connection: check that -envelope " + o.Envelope +
		" matches the listener's protocol.envelope (its log says which protocol error it saw)"
}

// httpAnswers reports whether addr answers an HTTP request with an HTTP
// status line.
func httpAnswers(addr string, tc *tls.Config, wait time.Duration) bool {
	nc, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return false
	}
	defer nc.Close()
	if tc != nil {
		c := tls.Client(nc, tc.Clone())
		nc = c
	}
	_ = nc.SetDeadline(time.Now().Add(wait))
	if _, err := nc.Write([]byte("GET / HTTP/1.1\r\nHost: shield\r\nConnection: close\r\n\r\n")); err != nil {
		return false
	}
	line, _ := bufio.NewReader(nc).ReadString('\n')
	return strings.HasPrefix(line, "HTTP/1.")
}
