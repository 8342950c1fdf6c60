// Package acceptance tests Shield end to end: the example game's real Lua
// services behind a real gateway, driven over loopback TCP by the client
// package and by raw sockets.
package acceptance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// Route ids of the example game (configs/actors.yaml) and of the probe.
const (
	routeLogin     = 1001
	routeMove      = 2001
	routeJoinRoom  = 2002
	routePosition  = 2101
	routeStale     = 9001
	routeEcho      = 9002
	routeWhoami    = 9003
	routeForge     = 9004
	routeLeave     = 9005
	routeProbePush = 9101
)

// envelopes are the listeners every game test runs over.
var envelopes = []string{"idlen", "typelen", "lenprefix", "delimiter"}

// gameConfig is the example game's actors (their real scripts) with one
// listener per envelope on port 0, plus the probe service on its own
// listener.
func gameConfig(t testing.TB, session string) string {
	t.Helper()
	services, err := filepath.Abs("../configs/services")
	if err != nil {
		t.Fatal(err)
	}
	probe, err := filepath.Abs("testdata/probe.lua")
	if err != nil {
		t.Fatal(err)
	}
	listeners := ""
	for _, e := range envelopes {
		listeners += fmt.Sprintf("    - {name: %s, address: \"127.0.0.1:0\", entry_service: auth, protocol: {envelope: %s}}\n", e, e)
	}
	listeners += "    - {name: probe, address: \"127.0.0.1:0\", entry_service: probe}\n"
	return fmt.Sprintf(`node: {name: gw-test}
network:
  listeners:
%s
session:
%s
actors:
%[3]s  - name: probe
    script: %[4]s
    rpc:
      routes:
        - {id: 9001, name: probe_stale, binding: stale, requires_auth: false}
        - {id: 9002, name: probe_echo, binding: echo, requires_auth: false}
        - {id: 9003, name: probe_whoami, binding: whoami, requires_auth: false}
        - {id: 9004, name: probe_forge, binding: forge, requires_auth: false}
        - {id: 9005, name: probe_leave, binding: leave, requires_auth: false}
        - {id: 9101, name: probe_push, binding: probe_push, direction: s2c}
`, listeners, session, exampleActors(services), probe)
}

// game is a running gateway with the example game.
type game struct {
	*wiretest.Server
}

// startGame starts the game; sessionYAML holds extra session keys (indented
// two spaces), or "  {}" for none. Everything is stopped, and goroutines
// checked, at cleanup.
func startGame(t testing.TB, sessionYAML string) *game {
	t.Helper()
	if sessionYAML == "" {
		sessionYAML = "  idle_timeout: 60s"
	}
	return startCodecGame(t, gameConfig(t, sessionYAML))
}

// dial connects a client to a listener (named after its envelope) and
// closes it at cleanup.
func (g *game) dial(t testing.TB, listener string) *client.Client {
	t.Helper()
	env := listener
	if listener == "probe" {
		env = "idlen"
	}
	return g.dialCodec(t, listener, env)
}

// call makes a request with a deadline and fails the test on error.
func call(t testing.TB, c *client.Client, route uint32, req, resp any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Call(ctx, route, req, resp); err != nil {
		t.Fatalf("call %d: %v", route, err)
	}
}

// expectNoAnswer makes a request that must get no answer within d.
func expectNoAnswer(t testing.TB, c *client.Client, route uint32, req any, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := c.Call(ctx, route, req, nil)
	if err != context.DeadlineExceeded {
		t.Fatalf("route %d: want no answer, got %v", route, err)
	}
}

// exampleActors is the actors block of configs/actors.yaml, with scripts
// from services (the example game's folder), for test configs that serve
// the example game beside their own listeners and services.
func exampleActors(services string) string {
	return strings.ReplaceAll(`  - name: auth
    script: SERVICES/auth.lua
    settings: {token_secret: dev-secret-change-me, dev_login: true}
    rpc: {routes: [{id: 1001, name: login, binding: login, requires_auth: false}]}
  - name: player
    script: SERVICES/player.lua
    instances: 2
    rpc:
      routes:
        - {id: 2001, name: move, binding: move}
        - {id: 2002, name: join_room, binding: join_room}
        - {id: 2003, name: profile, binding: profile}
        - {id: 2101, name: position, binding: position, direction: s2c, owner_service: room}
        - {id: 2102, name: left, binding: left, direction: s2c, owner_service: room}
  - name: room
    script: SERVICES/room.lua
`, "SERVICES", services)
}
