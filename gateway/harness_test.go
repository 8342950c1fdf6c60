package gateway_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/internal/wiretest"
)

// These tests run the real gateway in front of a real Lua service
// (testdata/wire.lua) and talk to it over loopback TCP with raw bytes.

// Routes of testdata/wire.lua.
const (
	routeEcho = 1
	routeFail = 2
	routeSink = 3 // action: drop
)

var envelopes = []string{"idlen", "typelen", "lenprefix", "delimiter"}

// maxFrame is every listener's max_frame_bytes: small, so that the limit
// is cheap to cross.
const maxFrame = 1024

// wait is the deadline of every expectation.
const wait = wiretest.Wait

func config(t testing.TB, session string) string {
	t.Helper()
	script, err := filepath.Abs("testdata/wire.lua")
	if err != nil {
		t.Fatal(err)
	}
	var listeners strings.Builder
	for _, e := range envelopes {
		fmt.Fprintf(&listeners, "    - {name: %s, address: \"127.0.0.1:0\", entry_service: wire, protocol: {envelope: %s, max_frame_bytes: %d}}\n", e, e, maxFrame)
	}
	return fmt.Sprintf(`node: {name: gw-wire}
network:
  listeners:
%s
session:
%s
actors:
  - name: wire
    script: %s
    rpc:
      routes:
        - {id: %d, name: echo, binding: echo, requires_auth: false}
        - {id: %d, name: fail, binding: fail, requires_auth: false}
        - {id: %d, name: sink, binding: echo, requires_auth: false, action: drop}
`, listeners.String(), session, script, routeEcho, routeFail, routeSink)
}

// server is a running gateway with the wire service, and what it logged.
type server struct {
	*wiretest.Server
}

// start starts a gateway; session holds the session block's keys, each
// indented two spaces. It is stopped, and goroutines checked, at cleanup.
func start(t testing.TB, session string) *server {
	t.Helper()
	if session == "" {
		session = "  idle_timeout: 60s"
	}
	return &server{wiretest.Start(t, "shield.yaml", config(t, session), nil)}
}

// wire is one raw connection read and written as a transcript.
type wire = wiretest.Conn

// dial connects to a listener, named after its envelope.
func (s *server) dial(t testing.TB, listener string) *wire {
	t.Helper()
	return wiretest.Dial(t, listener, s.Addr(listener), listener)
}
