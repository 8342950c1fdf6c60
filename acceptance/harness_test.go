// Package acceptance tests Shield end to end: the example game's real Lua
// services behind a real gateway, driven over loopback TCP by the client
// package and by raw sockets.
package acceptance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
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
  - name: auth
    script: %[3]s/auth.lua
    rpc: {routes: [{id: 1001, name: login, binding: login, requires_auth: false}]}
  - name: player
    script: %[3]s/player.lua
    instances: 2
    rpc:
      routes:
        - {id: 2001, name: move, binding: move}
        - {id: 2002, name: join_room, binding: join_room}
        - {id: 2101, name: position, binding: position, direction: s2c, owner_service: room}
  - name: room
    script: %[3]s/room.lua
  - name: probe
    script: %[4]s
    rpc:
      routes:
        - {id: 9001, name: probe_stale, binding: stale, requires_auth: false}
        - {id: 9002, name: probe_echo, binding: echo, requires_auth: false}
        - {id: 9003, name: probe_whoami, binding: whoami, requires_auth: false}
        - {id: 9004, name: probe_forge, binding: forge, requires_auth: false}
        - {id: 9101, name: probe_push, binding: probe_push, direction: s2c}
`, listeners, session, services, probe)
}

// game is a running gateway with the example game.
type game struct {
	srv *bootstrap.Server
}

// startGame starts the game; sessionYAML holds extra session keys (indented
// two spaces), or "  {}" for none. Everything is stopped, and goroutines
// checked, at cleanup.
func startGame(t testing.TB, sessionYAML string) *game {
	t.Helper()
	before := runtime.NumGoroutine()
	if sessionYAML == "" {
		sessionYAML = "  idle_timeout: 60s"
	}
	path := filepath.Join(t.TempDir(), "actors.yaml")
	if err := os.WriteFile(path, []byte(gameConfig(t, sessionYAML)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, path, bootstrap.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		waitGoroutines(t, before)
	})
	return &game{srv: srv}
}

func (g *game) addr(listener string) string { return g.srv.Gateway.Addr(listener).String() }

// dial connects a client to a listener (named after its envelope) and
// closes it at cleanup.
func (g *game) dial(t testing.TB, listener string) *client.Client {
	t.Helper()
	env := listener
	if listener == "probe" {
		env = "idlen"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, g.addr(listener), client.Options{Envelope: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// counter reads a labelled counter of the server's metrics.
func (g *game) dropped(reason string) float64 {
	return testutil.ToFloat64(g.srv.Metrics.EdgeDropped.WithLabelValues(reason))
}

func (g *game) protocolErrors(reason string) float64 {
	return testutil.ToFloat64(g.srv.Metrics.ProtocolErrors.WithLabelValues(reason))
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

// eventually polls cond until it holds or 5 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("leaked goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
