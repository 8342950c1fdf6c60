package acceptance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// The edge and limits tests run testdata/limits.lua behind a gateway of
// their own, whose session block each test chooses, with one listener per
// envelope (named after it) and a "spin" listener in front of a service
// with a one-message mailbox.

// Routes of testdata/limits.lua.
const (
	rLogin     = 101
	rEcho      = 102
	rWhoami    = 103
	rMark      = 104
	rMarks     = 105
	rSleep     = 106
	rJoin      = 107
	rBroadcast = 108
	rPush      = 109
	rNote      = 201 // s2c
	rBig       = 202 // s2c
	rSpin      = 301
)

// edgeGateway is the node name of the edge tests' gateway.
const edgeGateway = "gw-edge"

// patience is the deadline of every wait in these tests.
const patience = wiretest.Wait

func edgeConfig(t testing.TB, session string) string {
	t.Helper()
	script, err := filepath.Abs("testdata/limits.lua")
	if err != nil {
		t.Fatal(err)
	}
	var listeners strings.Builder
	for _, e := range envelopes {
		fmt.Fprintf(&listeners, "    - {name: %s, address: \"127.0.0.1:0\", entry_service: edge, protocol: {envelope: %s}}\n", e, e)
	}
	listeners.WriteString("    - {name: spin, address: \"127.0.0.1:0\", entry_service: spin}\n")
	return fmt.Sprintf(`node: {name: %s}
network:
  listeners:
%s
session:
%s
actors:
  - name: edge
    script: %[4]s
    rpc:
      routes:
        - {id: %d, name: login, binding: login, requires_auth: false}
        - {id: %d, name: echo, binding: echo, requires_auth: false}
        - {id: %d, name: whoami, binding: whoami, requires_auth: false}
        - {id: %d, name: mark, binding: mark, requires_auth: false}
        - {id: %d, name: marks, binding: marks, requires_auth: false}
        - {id: %d, name: sleep, binding: sleep, requires_auth: false}
        - {id: %d, name: join, binding: join}
        - {id: %d, name: broadcast, binding: broadcast}
        - {id: %d, name: push, binding: push}
        - {id: %d, name: note, binding: note, direction: s2c}
        - {id: %d, name: big, binding: big, direction: s2c}
  - name: spin
    script: %[4]s
    mailbox: 1
    rpc:
      routes:
        - {id: %[16]d, name: spin, binding: spin, requires_auth: false}
`, edgeGateway, listeners.String(), session, script,
		rLogin, rEcho, rWhoami, rMark, rMarks, rSleep, rJoin, rBroadcast, rPush, rNote, rBig, rSpin)
}

// edgeServer is a running gateway with the limits service, and what it
// logged.
type edgeServer struct {
	*wiretest.Server
}

// startEdge starts a gateway; session holds the session block's keys, each
// indented two spaces ("" for the defaults). It is stopped, unless the test
// stopped it, and goroutines are checked at cleanup.
func startEdge(t testing.TB, session string) *edgeServer {
	t.Helper()
	if session == "" {
		session = "  idle_timeout: 60s"
	}
	return &edgeServer{wiretest.Start(t, "edge.yaml", edgeConfig(t, session), nil)}
}

// listenerEnvelope is the envelope a listener speaks: its name, but idlen
// for spin.
func listenerEnvelope(listener string) string {
	if listener == "spin" {
		return "idlen"
	}
	return listener
}

// client dials a listener with the Go client, closed at cleanup.
func (e *edgeServer) client(t testing.TB, listener string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := client.Dial(ctx, e.Addr(listener), client.Options{Envelope: listenerEnvelope(listener)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// callCode makes a request that must fail, and returns its code.
func callCode(t testing.TB, c *client.Client, route uint32, req any) codes.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := c.Call(ctx, route, req, nil)
	code, ok := codes.CodeOf(err)
	if !ok {
		t.Fatalf("route %d: want an error frame, got %v", route, err)
	}
	return code
}

// ref is a ClientRef as Lua and JSON spell it.
type ref struct {
	SessionID uint64 `json:"session_id"`
	Epoch     uint64 `json:"epoch"`
	PlayerID  string `json:"player_id,omitempty"`
	Gateway   string `json:"gateway"`
}

// loginAs logs c in as user and returns its new ref.
func loginAs(t testing.TB, c *client.Client, user string) ref {
	t.Helper()
	var r ref
	call(t, c, rLogin, map[string]string{"user": user}, &r)
	if r.PlayerID != user || r.Gateway != edgeGateway || r.Epoch != 2 {
		t.Fatalf("login %s: %+v", user, r)
	}
	return r
}

// transcript is one raw connection read and written like a transcript.
type transcript = wiretest.Conn

// raw dials a listener for a transcript, closed at cleanup.
func (e *edgeServer) raw(t testing.TB, listener string) *transcript {
	t.Helper()
	return wiretest.Dial(t, listener, e.Addr(listener), listenerEnvelope(listener))
}
