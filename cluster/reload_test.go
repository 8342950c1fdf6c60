package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/luavm"
)

// TestReloadPerNode (SPEC §12 in a cluster): a reload is one node's; it
// replaces the VMs that node hosts and whose settings changed, calls from
// other nodes reach the new VMs, and a change to the route table is
// refused on any node.
func TestReloadPerNode(t *testing.T) {
	testutil.CheckGoroutines(t)
	a, _, s := threeNodes(t)
	reload := func(n *node) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return n.Srv.Reload(ctx)
	}
	edit := func(n *node, old, new string) {
		t.Helper()
		b, err := os.ReadFile(n.path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s has no %q", n.path, old)
		}
		testutil.WriteFile(t, n.path, strings.Replace(string(b), old, new, 1))
	}
	gen := func(n *node, service string) int {
		return int(promtest.ToFloat64(n.Srv.Metrics.VMGenerations.WithLabelValues(service)))
	}

	if err := reload(s); err != nil {
		t.Fatalf("an unchanged reload: %v", err)
	}
	edit(s, "    script: "+filepathOf(t, "calc.lua")+"\n", "    script: "+filepathOf(t, "calc.lua")+"\n    settings: {v: 2}\n")
	if err := reload(s); err != nil {
		t.Fatal(err)
	}
	if gen(s, "calc") != 2 || gen(s, "player") != 1 {
		t.Errorf("generations on S: calc %d, player %d; want 2 and 1", gen(s, "calc"), gen(s, "player"))
	}
	// A's runtime calls calc on S, as /admin/call on A would.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vals, cerr := a.Srv.Runtime.Call(ctx, luavm.Address{Service: "calc"}, "add", [][]byte{[]byte(`{"a": 2, "b": 40}`)}, 5*time.Second)
	if cerr != nil || len(vals) != 1 || string(vals[0]) != "42" {
		t.Errorf("calc.add from A after S's reload: %q %v", vals, cerr)
	}

	edit(a, "        - {id: 9502,", "        - {id: 9504, name: front_more, binding: send, requires_auth: false}\n        - {id: 9502,")
	err := reload(a)
	if err == nil || !strings.Contains(err.Error(), "reload: the route table changed; restart to change it") {
		t.Errorf("a route added on A: %v", err)
	}
}

// filepathOf is testdata/name as the node configs write it.
func filepathOf(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
