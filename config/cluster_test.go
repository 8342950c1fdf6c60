package config_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/testutil"
)

// threeActors is a cluster node's actors block: auth (1 instance), player
// (3) and room (2), under an embedded NATS, with no network at all. The
// node mapping is appended by each case.
const threeActors = `cluster: {embedded: "127.0.0.1:4222"}
actors:
  - {name: auth, script: auth.lua}
  - {name: player, script: player.lua, instances: 3}
  - {name: room, script: room.lua, instances: 2}
`

// TestDefaultsClusterAndStorage: the defaults of the mappings that are off
// unless given, and of the admin keys added with the admin API.
func TestDefaultsClusterAndStorage(t *testing.T) {
	cfg := parseOK(t, valid+`cluster: {nats: "nats://127.0.0.1:4222"}
storage:
  buckets:
    - {name: players}
`)
	wantC := config.Cluster{Line: 10, NATS: "nats://127.0.0.1:4222", Prefix: "shield", Heartbeat: time.Second, NodeTimeout: 3 * time.Second}
	if cfg.Cluster == nil || *cfg.Cluster != wantC {
		t.Errorf("cluster = %+v, want %+v", cfg.Cluster, wantC)
	}
	wantS := &config.Storage{Line: 12, DataDir: filepath.Join("conf", "data"), Replicas: 1, Buckets: []config.Bucket{{Line: 13, Name: "players", MaxValueBytes: 65536, TTL: 0}}}
	if !reflect.DeepEqual(cfg.Storage, wantS) {
		t.Errorf("storage = %+v, want %+v", cfg.Storage, wantS)
	}
	if cfg.Node.Services != nil {
		t.Errorf("node.services = %#v, want nil (every actor) when absent", cfg.Node.Services)
	}

	cfg = parseOK(t, valid+"storage: {}\n")
	if want := (&config.Storage{Line: 10, DataDir: filepath.Join("conf", "data"), Replicas: 1}); !reflect.DeepEqual(cfg.Storage, want) {
		t.Errorf("storage = %+v, want %+v", cfg.Storage, want)
	}
	cfg = parseOK(t, "network:\n  admin: {address: \":9100\"}\n"+listenersHead[len("network:\n"):]+authHead[len(listenersHead):])
	if a := cfg.Network.Admin; a == nil || a.Play || a.Token != "" || a.PProf {
		t.Errorf("admin = %+v, want play and pprof false, no token", a)
	}
}

// TestNodeServices: absent hosts everything, [] nothing, a list what it
// names; Hosts and HostedInstances agree with it, and neither hosts an
// actor or an instance that does not exist.
func TestNodeServices(t *testing.T) {
	type hosted map[string][]int
	for _, tc := range []struct {
		name     string
		node     string // appended to threeActors; empty: no node mapping
		services []config.NodeService
		want     hosted
	}{
		{"absent", "", nil,
			hosted{"auth": {0}, "player": {0, 1, 2}, "room": {0, 1}}},
		{"null", "node: {services: ~}\n", nil,
			hosted{"auth": {0}, "player": {0, 1, 2}, "room": {0, 1}}},
		{"empty", "node: {services: []}\nnetwork:\n  listeners: [{name: game, address: \":7000\", entry_service: auth}]\n",
			[]config.NodeService{},
			hosted{"auth": nil, "player": nil, "room": nil}},
		{"actors and instances", "node: {services: [auth, player/0, player/2]}\n",
			[]config.NodeService{{Line: 6, Actor: "auth", Instance: config.AllInstances}, {Line: 6, Actor: "player", Instance: 0}, {Line: 6, Actor: "player", Instance: 2}},
			hosted{"auth": {0}, "player": {0, 2}, "room": nil}},
		{"one whole actor", "node:\n  services:\n    - room\n", []config.NodeService{{Line: 8, Actor: "room", Instance: config.AllInstances}},
			hosted{"auth": nil, "player": nil, "room": {0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseOK(t, threeActors+tc.node)
			if !reflect.DeepEqual(cfg.Node.Services, tc.services) {
				t.Fatalf("node.services = %#v, want %#v", cfg.Node.Services, tc.services)
			}
			if (cfg.Node.Services == nil) != (tc.services == nil) {
				t.Fatalf("node.services nil = %v, want %v", cfg.Node.Services == nil, tc.services == nil)
			}
			for actor, want := range tc.want {
				if got := cfg.HostedInstances(actor); !reflect.DeepEqual(got, want) {
					t.Errorf("HostedInstances(%s) = %v, want %v", actor, got, want)
				}
				for i := range cfg.Actor(actor).Instances {
					in := false
					for _, w := range want {
						in = in || w == i
					}
					if got := cfg.Hosts(actor, i); got != in {
						t.Errorf("Hosts(%s, %d) = %v, want %v", actor, i, got, in)
					}
				}
			}
			if cfg.Hosts("player", 3) || cfg.Hosts("player", -1) || cfg.Hosts("lobby", 0) || cfg.HostedInstances("lobby") != nil {
				t.Error("an instance out of range, or an actor that does not exist, is hosted")
			}
		})
	}
}

func TestNodeServiceString(t *testing.T) {
	for s, want := range map[config.NodeService]string{
		{Actor: "player", Instance: config.AllInstances}: "player",
		{Actor: "player", Instance: 0}:                   "player/0",
		{Actor: "player", Instance: 12}:                  "player/12",
	} {
		if got := s.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", s, got, want)
		}
	}
}

// TestClusterNodes: in a cluster a node may have no listeners (a service
// node), or listeners and no services (a gateway node); either address of
// NATS works.
func TestClusterNodes(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"service node", threeActors + "node: {name: svc-1, services: [player]}\n"},
		{"service node hosting everything", threeActors},
		{"gateway node", listenersHead + actorsOnly + "cluster: {nats: \"nats://a:4222, nats://b:4222\"}\nnode: {services: []}\n"},
		{"listeners empty", threeActors + "network: {listeners: []}\n"},
		{"embedded on any port", listenersHead + actorsOnly + "cluster: {embedded: \":0\"}\n"},
		{"websocket nats", valid + "cluster: {nats: \"wss://nats.example.com:443\"}\n"},
		{"node_timeout exactly twice", valid + "cluster: {embedded: \":4222\", heartbeat: 250ms, node_timeout: 500ms}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cfg := parseOK(t, tc.src); cfg.Cluster == nil {
				t.Fatal("cluster = nil")
			}
		})
	}
	cfg := parseOK(t, valid+"cluster: {embedded: \"127.0.0.1:4222\"}\n")
	if c := cfg.Cluster; c.Embedded != "127.0.0.1:4222" || c.NATS != "" || c.URLs() != nil {
		t.Errorf("cluster = %+v, URLs %q; want the embedded address and no URL", c, c.URLs())
	}
}

// TestStorageDataDir: data_dir resolves against the config file's folder,
// like every other path, whatever the working directory; an absolute one
// stays as written.
func TestStorageDataDir(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "elsewhere", "kv")
	for _, tc := range []struct{ storage, want string }{
		{"storage: {}\n", filepath.Join(dir, "cfg", "data")},
		{"storage: {data_dir: ../state/kv}\n", filepath.Join(dir, "state", "kv")},
		{"storage: {data_dir: \"" + abs + "\"}\n", abs},
	} {
		path := filepath.Join(dir, "cfg", "game.yaml")
		testutil.WriteFile(t, path, valid+tc.storage)
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Storage.DataDir; got != tc.want {
			t.Errorf("%sdata_dir = %q, want %q", tc.storage, got, tc.want)
		}
	}
}
