package acceptance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// TestClusterServiceNodeSIGKILL (SPEC §10) runs the example cluster's
// gateway A and service node as real processes, binds alice (on A) to a
// player VM on the service node, and kill -9s the service node: alice
// gets session.target_lost within node_timeout (3 s) plus one second, and
// A goes on serving logins (auth is A's own).
func TestClusterServiceNodeSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	port := freeLoopbackPort(t)
	actors := exampleClusterActors(t)
	a := fmt.Sprintf(`node: {name: gw-a, services: [auth]}
cluster: {embedded: "127.0.0.1:%d", heartbeat: 1s, node_timeout: 3s}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: auth}
  admin: {address: "127.0.0.1:0"}
log: {format: json, level: info}
%s`, port, actors)
	svc := fmt.Sprintf(`node: {name: svc-1, services: [player, room]}
cluster: {nats: "nats://127.0.0.1:%d", heartbeat: 1s, node_timeout: 3s}
network:
  admin: {address: "127.0.0.1:0"}
log: {format: json, level: info}
%s`, port, actors)
	_, game, aAdmin := startProcess(t, a)
	s, _, sAdmin := startProcess(t, svc)
	waitFor(t, 10*time.Second, "both nodes ready, each seeing the other", func() bool {
		return clusterSeen(t, 2, aAdmin, sAdmin)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	alice, err := client.Dial(ctx, game, client.Options{HeartbeatEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	lost := make(chan time.Time, 1)
	alice.OnNotice(func(code, _ string) {
		if code == string(codes.SessionTargetLost) {
			lost <- time.Now()
		}
	})
	if err := alice.Call(ctx, 1001, map[string]string{"user": "alice"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := alice.Call(ctx, 2002, map[string]string{"room": "lobby"}, nil); err != nil {
		t.Fatalf("join_room on the service node: %v", err)
	}

	killed := time.Now()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-lost:
		took := at.Sub(killed)
		t.Logf("session.target_lost %v after kill -9 (node_timeout 3s)", took.Round(time.Millisecond))
		if took > 4*time.Second {
			t.Errorf("session.target_lost after %v, want within node_timeout plus one second", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no session.target_lost within 10s of kill -9")
	}
	// A still answers: bob's login runs on A, and its bind to a player VM
	// nobody hosts now fails at once.
	bob, err := client.Dial(ctx, game, client.Options{HeartbeatEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	err = bob.Call(ctx, 1001, map[string]string{"user": "bob"}, nil)
	if !errors.Is(err, &codes.Error{Code: codes.Unavailable}) {
		t.Errorf("bob's login with the player node gone: %v, want client_rpc.unavailable", err)
	}
}

// TestClusterGatewaySIGKILL (SPEC §10): alice on gateway A and bob on
// gateway B share a room on the service node; kill -9 of B makes the
// service node run client_disconnected(..., "gateway_lost") for bob, and
// alice gets the room's left push for him within node_timeout plus one
// second.
func TestClusterGatewaySIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	port := freeLoopbackPort(t)
	actors := exampleClusterActors(t)
	node := func(name, services, cluster string, listeners bool) string {
		l := ""
		if listeners {
			l = "  listeners:\n    - {name: game, address: \"127.0.0.1:0\", entry_service: auth}\n"
		}
		return fmt.Sprintf("node: {name: %s, services: %s}\ncluster: {%s, heartbeat: 1s, node_timeout: 3s}\n"+
			"network:\n%s  admin: {address: \"127.0.0.1:0\"}\nlog: {format: json, level: info}\n%s", name, services, cluster, l, actors)
	}
	nats := fmt.Sprintf("nats: \"nats://127.0.0.1:%d\"", port)
	_, gameA, aAdmin := startProcess(t, node("gw-a", "[auth]", fmt.Sprintf("embedded: \"127.0.0.1:%d\"", port), true))
	b, gameB, bAdmin := startProcess(t, node("gw-b", "[]", nats, true))
	_, _, sAdmin := startProcess(t, node("svc-1", "[player, room]", nats, false))
	waitFor(t, 10*time.Second, "the three nodes ready, each seeing the others", func() bool {
		return clusterSeen(t, 3, aAdmin, bAdmin, sAdmin)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	enter := func(addr, user string) *client.Client {
		c, err := client.Dial(ctx, addr, client.Options{HeartbeatEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Call(ctx, 1001, map[string]string{"user": user}, nil); err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		if err := c.Call(ctx, 2002, map[string]string{"room": "lobby"}, nil); err != nil {
			t.Fatalf("join_room %s: %v", user, err)
		}
		return c
	}
	alice := enter(gameA, "alice")
	left := make(chan time.Time, 4)
	alice.OnPush(2102, func(body []byte) {
		if strings.Contains(string(body), `"bob"`) {
			left <- time.Now()
		}
	})
	enter(gameB, "bob")

	killed := time.Now()
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-left:
		took := at.Sub(killed)
		t.Logf("bob left alice's room %v after kill -9 of his gateway (node_timeout 3s)", took.Round(time.Millisecond))
		if took > 4*time.Second {
			t.Errorf("left after %v, want within node_timeout plus one second", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no left push for bob within 10s of kill -9 of his gateway")
	}
}

// exampleClusterActors is the actors block of configs/cluster/a.yaml with
// absolute script paths.
func exampleClusterActors(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../configs/cluster/a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, actors, ok := strings.Cut(string(b), "\nactors:\n")
	if !ok {
		t.Fatal("configs/cluster/a.yaml has no actors block")
	}
	services, err := filepath.Abs("../configs/services")
	if err != nil {
		t.Fatal(err)
	}
	return "actors:\n" + strings.ReplaceAll(actors, "../services/", services+"/")
}

// clusterSeen reports whether every node of admins is ready and counts n
// live nodes. A node's own readiness says nothing of what the others
// heard: a gateway that has not yet heard a service node's announcement
// answers a login for it unavailable.
func clusterSeen(t *testing.T, n int, admins ...string) bool {
	for _, a := range admins {
		if readyz(a) != 200 || scrape(t, a, "shield_cluster_nodes") != float64(n) {
			return false
		}
	}
	return true
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSignalDuringStart (docs/cluster.md "Presence, start-up and
// readiness"): a node with storage started before its NATS waits for it
// to open its buckets; SIGTERM meanwhile ends the start, exit status 1.
func TestSignalDuringStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "actors.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`node: {name: svc-1, services: [player, room]}
cluster: {nats: "nats://127.0.0.1:%d"}
storage: {data_dir: %q, buckets: [{name: players}]}
log: {format: json, level: info}
%s`, freeLoopbackPort(t), dir, exampleClusterActors(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &lockedLog{}
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	waitFor(t, 10*time.Second, "the node waiting for NATS", func() bool {
		return strings.Contains(logs.String(), "storage: waiting for the cluster's NATS connection")
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("exit after SIGTERM during the start: %v, want status 1", err)
		}
		done <- err // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatalf("still starting 5s after SIGTERM:\n%s", logs.String())
	}
}

// lockedLog is a process's stderr, written by exec's copying goroutine
// and read by the test.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
