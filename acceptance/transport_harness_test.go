package acceptance

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/certgen"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// The transport tests run the edge service (testdata/limits.lua) or the
// example game behind listeners of every transport: plain tcp, ws, tls
// (tcp under TLS) and wss (ws under TLS), named <transport>_<envelope>.
// Certificates are made for each test in its temporary folder.

// transports are the four ways a client reaches a listener.
var transports = []string{"tcp", "ws", "tls", "wss"}

// tlistener is one listener of a transport test.
type tlistener struct {
	transport string // tcp, ws, tls or wss
	envelope  string
	extra     string // more flow-mapping keys, e.g. "handshake_timeout: 300ms"
	mtls      bool   // require a client certificate signed by the test CA
}

func (l tlistener) name() string { return l.transport + "_" + l.envelope }

// ws reports whether the listener speaks WebSocket.
func (l tlistener) ws() bool { return l.transport == "ws" || l.transport == "wss" }

// tls reports whether the listener runs under TLS.
func (l tlistener) tls() bool { return l.transport == "tls" || l.transport == "wss" || l.mtls }

// everyTransport is a listener for each transport and envelope.
func everyTransport() []tlistener {
	var ls []tlistener
	for _, tr := range transports {
		for _, env := range envelopes {
			ls = append(ls, tlistener{transport: tr, envelope: env})
		}
	}
	return ls
}

func (l tlistener) yaml(entry string, certs certgen.Files) string {
	keys := []string{fmt.Sprintf("name: %s", l.name()), `address: "127.0.0.1:0"`, "entry_service: " + entry}
	if l.ws() {
		keys = append(keys, "transport: ws")
	}
	if l.tls() {
		ca := ""
		if l.mtls {
			ca = ", client_ca_file: " + certs.CA
		}
		keys = append(keys, fmt.Sprintf("tls: {cert_file: %s, key_file: %s%s}", certs.ServerCert, certs.ServerKey, ca))
	}
	if l.extra != "" {
		keys = append(keys, l.extra)
	}
	keys = append(keys, "protocol: {envelope: "+l.envelope+"}")
	return "    - {" + strings.Join(keys, ", ") + "}\n"
}

// withListeners replaces the listeners of a test config (the lines between
// "  listeners:" and the next top-level key) by ls.
func withListeners(t testing.TB, config, ls string) string {
	t.Helper()
	start := strings.Index(config, "  listeners:\n")
	end := strings.Index(config, "\nsession:")
	if start < 0 || end < start {
		t.Fatalf("config without a listeners block:\n%s", config)
	}
	return config[:start] + "  listeners:\n" + ls + config[end:]
}

// tserver is a gateway behind transport-test listeners.
type tserver struct {
	*edgeServer
	certs     certgen.Files
	listeners map[string]tlistener
}

// startTransportEdge serves the edge service behind ls; session holds the
// session block's keys ("" for the defaults).
func startTransportEdge(t testing.TB, session string, ls ...tlistener) *tserver {
	t.Helper()
	if session == "" {
		session = "  idle_timeout: 60s"
	}
	return startTransport(t, "edge", func(listeners string) string {
		return withListeners(t, edgeConfig(t, session), listeners)
	}, ls)
}

// startTransportGame serves the example game behind ls.
func startTransportGame(t testing.TB, ls ...tlistener) *tserver {
	t.Helper()
	return startTransport(t, "auth", func(listeners string) string {
		return withListeners(t, gameConfig(t, "  idle_timeout: 60s"), listeners)
	}, ls)
}

func startTransport(t testing.TB, entry string, config func(listeners string) string, ls []tlistener) *tserver {
	t.Helper()
	certs, err := certgen.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &tserver{certs: certs, listeners: map[string]tlistener{}}
	var yaml strings.Builder
	for _, l := range ls {
		yaml.WriteString(l.yaml(entry, certs))
		s.listeners[l.name()] = l
	}
	s.edgeServer = &edgeServer{wiretest.Start(t, "transport.yaml", config(yaml.String()), nil)}
	return s
}

// clientTLS is the TLS config of a well-behaved client: it trusts the test
// CA and presents the client certificate it signed.
func (s *tserver) clientTLS(t testing.TB) *tls.Config {
	t.Helper()
	cfg, err := certgen.ClientConfig(s.certs.CA, s.certs.ClientCert, s.certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// options are the client options that reach listener name.
func (s *tserver) options(t testing.TB, name string) client.Options {
	t.Helper()
	l, ok := s.listeners[name]
	if !ok {
		t.Fatalf("no listener %q", name)
	}
	o := client.Options{Envelope: l.envelope}
	if l.ws() {
		o.Transport = "ws"
	}
	if l.tls() {
		o.TLS = s.clientTLS(t)
	}
	return o
}

// dialWith connects the Go client to a listener with o, closed at cleanup.
func (s *tserver) dialWith(t testing.TB, name string, o client.Options) (*client.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := client.Dial(ctx, s.Addr(name), o)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// dial connects the Go client to a listener, as its transport needs.
func (s *tserver) dial(t testing.TB, name string) *client.Client {
	t.Helper()
	c, err := s.dialWith(t, name, s.options(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

// frameWire is a raw connection read and written as a transcript, whatever
// its transport: *transcript over tcp and tls, *wsTranscript over ws.
type frameWire interface {
	Send(frames ...envelope.Frame)
	Expect(want envelope.Frame) envelope.Frame
	ExpectNothing(d time.Duration)
	ExpectClosed()
}

// wire opens a raw transcript on a listener, closed at cleanup.
func (s *tserver) wire(t testing.TB, name string) frameWire {
	t.Helper()
	l := s.listeners[name]
	if l.ws() {
		return s.wsWire(t, name, nil)
	}
	codec := wiretest.Codec(t, l.envelope)
	var nc net.Conn
	var err error
	if l.tls() {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: patience}, Config: s.clientTLS(t)}
		nc, err = d.Dial("tcp", s.Addr(name))
	} else {
		nc, err = net.DialTimeout("tcp", s.Addr(name), patience)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { nc.Close() })
	return wiretest.NewConn(t, name, nc, codec)
}

// wsWire upgrades at the listener's /ws with extra headers (an Origin).
func (s *tserver) wsWire(t testing.TB, name string, header map[string]string) *wsTranscript {
	t.Helper()
	w, err := s.tryWS(t, name, header)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w
}

// tryWS is wsWire returning the upgrade's error.
func (s *tserver) tryWS(t testing.TB, name string, header map[string]string) (*wsTranscript, error) {
	t.Helper()
	l := s.listeners[name]
	codec := wiretest.Codec(t, l.envelope)
	scheme, tr := "ws", &httpTransport{}
	if l.tls() {
		scheme, tr.tls = "wss", s.clientTLS(t)
	}
	opts := &websocket.DialOptions{HTTPClient: tr.client()}
	if len(header) > 0 {
		opts.HTTPHeader = map[string][]string{}
		for k, v := range header {
			opts.HTTPHeader.Set(k, v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, scheme+"://"+s.Addr(name)+"/ws", opts)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
		return nil, err
	}
	ws.SetReadLimit(1 << 20)
	w := &wsTranscript{t: t, name: name, ws: ws, codec: codec, typ: websocket.MessageBinary, in: make(chan wsMessage, 256), done: make(chan struct{})}
	if codec.Text() {
		w.typ = websocket.MessageText
	}
	go w.readLoop()
	t.Cleanup(w.close)
	return w, nil
}
