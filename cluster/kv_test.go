package cluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/testutil"
)

// TestKVOnTheClusterNATS (SPEC §11 in a cluster): shield.kv is the
// cluster's store. Gateway A embeds the NATS server with JetStream in its
// storage.data_dir; the service node S keeps player profiles there over
// its one cluster connection. A profile written on S is read back by a
// restarted S (a new process's VMs, nothing in memory), so it went
// through JetStream on A.
func TestKVOnTheClusterNATS(t *testing.T) {
	testutil.CheckGoroutines(t)
	port := freePort(t)
	data := t.TempDir()
	storage := "storage: {data_dir: " + data + ", buckets: [{name: players}]}\n"
	a := startNode(t, nodeSpec{name: "gw-a", services: "[auth, front]", gateway: true, top: storage,
		cluster: fmt.Sprintf("embedded: 127.0.0.1:%d", port)})
	nats := fmt.Sprintf("nats: nats://127.0.0.1:%d", port)
	sSpec := nodeSpec{name: "svc", services: "[player, room, calc]", cluster: nats, top: storage}
	s := startNode(t, sSpec)
	waitReady(t, a, s)

	type profile struct {
		Moves int `json:"moves"`
		X     int `json:"x"`
	}
	alice := dial(t, a, "game")
	login(t, alice, "alice")
	call(t, alice, routeJoinRoom, map[string]string{"room": "lobby"}, nil)
	call(t, alice, routeMove, map[string]int{"x": 7, "y": 1}, nil)
	var p profile
	call(t, alice, routeProfile, struct{}{}, &p)
	if p.Moves != 1 || p.X != 7 {
		t.Fatalf("profile: %+v", p)
	}
	alice.Close()

	// S goes away and comes back: its VMs start empty.
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s = startNode(t, sSpec)
	waitReady(t, a, s)
	alice = dial(t, a, "game")
	login(t, alice, "alice")
	call(t, alice, routeProfile, struct{}{}, &p)
	if p.Moves != 1 || p.X != 7 {
		t.Errorf("the profile after S restarted: %+v, want moves 1 at x 7", p)
	}
	if _, err := os.Stat(filepath.Join(data, "jetstream")); err != nil {
		t.Errorf("no JetStream files in A's data_dir: %v", err)
	}
}

// TestStorageNodeBeforeNATS (docs/cluster.md "Presence, start-up and
// readiness"): a node with a storage block started before its NATS waits
// for the connection to open its buckets (it neither exits nor serves),
// then starts, and its profiles go through JetStream.
func TestStorageNodeBeforeNATS(t *testing.T) {
	testutil.CheckGoroutines(t)
	port := freePort(t)
	storage := "storage: {data_dir: " + t.TempDir() + ", buckets: [{name: players}]}\n"
	sSpec := nodeSpec{name: "svc", services: "[player, room, calc]", cluster: fmt.Sprintf("nats: nats://127.0.0.1:%d", port), top: storage}
	started := make(chan *node, 1)
	go func() { started <- startNode(t, sSpec) }()
	select {
	case <-started:
		t.Fatal("the storage node started without NATS")
	case <-time.After(2 * nodeTimeout):
	}
	a := startNode(t, nodeSpec{name: "gw-a", services: "[auth, front]", gateway: true, top: storage,
		cluster: fmt.Sprintf("embedded: 127.0.0.1:%d", port)})
	var s *node
	select {
	case s = <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the storage node did not start within 20s of NATS")
	}
	waitReady(t, a, s)
	alice := dial(t, a, "game")
	login(t, alice, "alice")
	call(t, alice, routeJoinRoom, map[string]string{"room": "lobby"}, nil)
	call(t, alice, routeMove, map[string]int{"x": 3, "y": 1}, nil)
}
