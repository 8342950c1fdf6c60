package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// Route ids of the example game and of the test services.
const (
	routeLogin    = 1001
	routeMove     = 2001
	routeJoinRoom = 2002
	routeProfile  = 2003
	routePosition = 2101
	routeCall     = 9501
	routeSend     = 9502
	routeTrace    = 9503
	routeKVGet    = 9505
)

// Cluster timings of the tests: a dead node is declared within
// nodeTimeout (plus a check tick).
const (
	heartbeat   = 200 * time.Millisecond
	nodeTimeout = 1 * time.Second
)

// testNATS is a NATS server in the test process, on a fixed loopback port
// so that it can be restarted at the same address.
type testNATS struct {
	t    testing.TB
	port int
	srv  *server.Server
}

func startNATS(t testing.TB) *testNATS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	n := &testNATS{t: t, port: port}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *testNATS) start() {
	n.t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: n.port, NoLog: true, NoSigs: true})
	if err != nil {
		n.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(5 * time.Second) {
		n.t.Fatal("nats server did not start")
	}
	n.srv = srv
}

func (n *testNATS) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}

func (n *testNATS) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

// nodeSpec is one node of a test cluster.
type nodeSpec struct {
	name      string
	services  string // the node.services value, e.g. "[auth, front]"
	gateway   bool   // listeners game (entry auth) and front (entry front)
	cluster   string // the cluster keys' values, e.g. "nats: nats://..."
	session   string // extra session keys, e.g. "duplicate_login: reject_new"
	top       string // extra top-level YAML, e.g. a storage block
	instances int    // player instances; 0: 2
	yaml      string // the whole config instead (rooms_test.go); the fields above then do not apply
}

// config is the node's file: the example game's actors with its real
// scripts, plus front and calc (testdata).
func (s nodeSpec) config(t testing.TB) string {
	t.Helper()
	if s.yaml != "" {
		return s.yaml
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	services, data := abs("../configs/services"), abs("testdata")
	listeners := ""
	if s.gateway {
		listeners = `network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: auth}
    - {name: front, address: "127.0.0.1:0", entry_service: front}
`
	}
	instances := s.instances
	if instances == 0 {
		instances = 2
	}
	return fmt.Sprintf(`node:
  name: %s
  services: %s
cluster:
  %s
  heartbeat: %s
  node_timeout: %s
%s%slog: {level: debug}
session:
  idle_timeout: 60s
  shutdown_grace: 2s
  %s
actors:
  - name: auth
    script: %[9]s/auth.lua
    settings: {dev_login: true}
    rpc: {routes: [{id: 1001, name: login, binding: login, requires_auth: false}]}
  - name: player
    script: %[9]s/player.lua
    instances: %[11]d
    rpc:
      routes:
        - {id: 2001, name: move, binding: move}
        - {id: 2002, name: join_room, binding: join_room}
        - {id: 2003, name: profile, binding: profile}
        - {id: 2101, name: position, binding: position, direction: s2c, owner_service: room}
        - {id: 2102, name: left, binding: left, direction: s2c, owner_service: room}
  - name: room
    script: %[9]s/room.lua
  - name: front
    script: %[10]s/front.lua
    handler_timeout: 2s
    rpc:
      routes:
        - {id: 9501, name: front_call, binding: call, requires_auth: false}
        - {id: 9502, name: front_send, binding: send, requires_auth: false}
        - {id: 9503, name: front_trace, binding: trace, requires_auth: false}
        - {id: 9505, name: front_kvget, binding: kvget, requires_auth: false}
  - name: calc
    script: %[10]s/calc.lua
`, s.name, s.services, s.cluster, heartbeat, nodeTimeout, s.top, listeners, s.session, services, data, instances)
}

// node is one running node of a test cluster.
type node struct {
	*wiretest.Server
	name  string
	path  string // its config file
	fatal chan error
}

// startNode starts a node in this process. Its log goes to a LogSink
// (dumped when the test fails); at cleanup it is stopped, unless the test
// stopped or killed it.
func startNode(t testing.TB, s nodeSpec) *node {
	t.Helper()
	n, err := tryNode(t, s)
	if err != nil {
		t.Fatalf("node %s: %v", s.name, err)
	}
	return n
}

// tryNode starts a node, or returns why it did not start.
func tryNode(t testing.TB, s nodeSpec) (*node, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), s.name+".yaml")
	testutil.WriteFile(t, path, s.config(t))
	logs := &wiretest.LogSink{}
	n := &node{name: s.name, path: path, fatal: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, path, bootstrap.Options{Logger: slog.New(logs), OnFatal: func(err error) {
		select {
		case n.fatal <- err:
		default:
		}
	}})
	if err != nil {
		return nil, err
	}
	n.Server = &wiretest.Server{Srv: srv, Logs: logs}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop %s: %v", s.name, err)
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", s.name, logs.Dump())
		}
	})
	return n, nil
}

// kill stops a node as SIGKILL would as far as the cluster can tell: it
// drops out without its leave; then its parts are shut down so that the
// test leaks nothing (its sessions' clients see the connections close).
func (n *node) kill(t testing.TB) {
	t.Helper()
	n.Srv.Cluster.Abandon()
	if err := n.Stop(); err != nil {
		t.Logf("stop of killed node %s: %v", n.name, err)
	}
}

// waitReady polls until every node is ready and sees all of them.
func waitReady(t testing.TB, nodes ...*node) {
	t.Helper()
	wiretest.Eventually(t, "cluster ready", func() bool {
		for _, n := range nodes {
			if !n.Srv.Cluster.Ready() || int(gauge(n)) != len(nodes) {
				return false
			}
		}
		return true
	})
}

func gauge(n *node) float64 {
	return readGauge(n.Srv.Metrics.EnableCluster().Nodes)
}

// dial connects a client to a listener of a gateway node.
func dial(t testing.TB, n *node, listener string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, n.Addr(listener), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call makes a request that must succeed.
func call(t testing.TB, c *client.Client, route uint32, req, resp any) {
	t.Helper()
	if err := try(c, route, req, resp); err != nil {
		t.Fatalf("call %d: %v", route, err)
	}
}

func try(c *client.Client, route uint32, req, resp any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Call(ctx, route, req, resp)
}

// codeOf is the code of an error frame, or "".
func codeOf(err error) codes.Code {
	var ce *codes.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

func login(t testing.TB, c *client.Client, user string) {
	t.Helper()
	var resp struct {
		PlayerID string `json:"player_id"`
	}
	call(t, c, routeLogin, map[string]string{"user": user}, &resp)
	if resp.PlayerID != user {
		t.Fatalf("login %s: player_id %q", user, resp.PlayerID)
	}
}

// notices records the notices a client gets.
type notices struct {
	mu    sync.Mutex
	codes []string
}

func watchNotices(c *client.Client) *notices {
	n := &notices{}
	c.OnNotice(func(code, _ string) {
		n.mu.Lock()
		n.codes = append(n.codes, code)
		n.mu.Unlock()
	})
	return n
}

func (n *notices) has(code codes.Code) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.codes {
		if c == string(code) {
			return true
		}
	}
	return false
}

// within polls cond until it holds, failing after d.
func within(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func TestMain(m *testing.M) {
	os.Exit(testutil.CheckGoroutinesMain(m, "cluster"))
}
