package bootstrap_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestNoClusterNoCost: without a cluster key the gateway and the runtime
// are wired to each other directly (SPEC §10: no NATS, no serialization):
// no node is made, the services answer straight into the gateway, and no
// cluster metric is registered.
func TestNoClusterNoCost(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	for _, name := range []string{"actors.yaml", "services/auth.lua", "services/player.lua", "services/room.lua", "services/arena.lua"} {
		data, err := os.ReadFile(filepath.Join("..", "configs", name))
		if err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, filepath.Join(dir, name), string(data))
	}
	opts := quiet()
	opts.Override = func(c *config.Config) {
		for i := range c.Network.Listeners {
			c.Network.Listeners[i].Address = "127.0.0.1:0"
		}
		c.Network.Admin = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, filepath.Join(dir, "actors.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	if srv.Cluster != nil {
		t.Error("a cluster node without a cluster key")
	}
	if sink := srv.Runtime.Sink(); sink != srv.Gateway {
		t.Errorf("the runtime sends through %T, not the gateway", sink)
	}
	mfs, err := srv.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if name := mf.GetName(); len(name) > 14 && name[:14] == "shield_cluster" {
			t.Errorf("metric %s without a cluster", name)
		}
	}
}
