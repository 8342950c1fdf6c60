package kv_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/kv"
	"github.com/shieldrpc/shield/luavm"
)

// TestKVWithoutStorage: without a storage block every shield.kv function
// raises client_rpc.unavailable, catchable.
func TestKVWithoutStorage(t *testing.T) {
	cases := []luaCase{{name: "every function raises unavailable",
		body: `local out = {}
		       for _, f in ipairs({ kv.get, kv.put, kv.create, kv.update, kv.delete, kv.keys }) do
		         local ok, e = pcall(f, "b", "k", 1, 1) out[#out + 1] = (not ok) and e.code
		       end
		       return out`,
		want: `["client_rpc.unavailable","client_rpc.unavailable","client_rpc.unavailable","client_rpc.unavailable","client_rpc.unavailable","client_rpc.unavailable"]`},
		{name: "the message says why", body: `return kv.get("b", "k")`, want: "client_rpc.unavailable", msg: `^shield\.kv\.get: no storage is configured`}}
	runCases(t, caseWorld(t, "", "", kvPrelude, cases), cases)
}

// TestKVTTL: a bucket's ttl removes a key that long after its last write.
func TestKVTTL(t *testing.T) {
	cases := []luaCase{{name: "a key expires",
		body: `kv.put("short", "k", 1)
		       kv.put("short", "kept.until.rewritten", 1)
		       local first = kv.get("short", "k")
		       local t0 = shield.now()
		       while kv.get("short", "k") ~= nil and shield.now() - t0 < 8000 do shield.sleep(100) end
		       return { first = first, gone = kv.get("short", "k") == nil, after = shield.now() - t0 >= 500,
		                keys = shield.json.encode(kv.keys("short")) }`,
		want: `{"after":true,"first":1,"gone":true,"keys":"[]"}`}}
	runCases(t, caseWorld(t, storageYAML("", "{name: short, ttl: 1s}"), "handler_timeout: 15s", kvPrelude, cases), cases)
}

// TestKVKeysLimit: keys returns at most the first 10,000 keys, in order.
func TestKVKeysLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,005 keys")
	}
	cases := []luaCase{{name: "the first 10,000",
		body: `for i = 1, 10005 do kv.put("b", string.format("k%05d", i), i) end
		       local keys = kv.keys("b")
		       local sorted = true
		       for i = 2, #keys do sorted = sorted and keys[i - 1] < keys[i] end
		       return { n = #keys, first = keys[1], last = keys[#keys], sorted = sorted, some = #kv.keys("b", "k1000") }`,
		want: `{"first":"k00001","last":"k10000","n":10000,"some":6,"sorted":true}`}}
	runCases(t, caseWorld(t, storageYAML("", "{name: b}"), "handler_timeout: 60s", kvPrelude, cases), cases)
}

// TestKVSurvivesRestart: values, revisions, deletions and the order of
// revisions survive a stop and a start on the same data_dir, and a
// bucket's settings are updated at start.
func TestKVSurvivesRestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "store")
	script := `local M = {}
function M.write(ctx, client, req)
  local r1 = shield.kv.put("b", "kept", { hp = 7, bag = { "sword" } })
  shield.kv.put("b", "gone", 1)
  shield.kv.delete("b", "gone")
  shield.kv.put("b", "last", "x")
  local r3 = shield.kv.put("b", "tmp", 1)
  shield.kv.delete("b", "tmp")      -- the bucket's last message is purged
  return { r1 = r1, r3 = r3 }
end
function M.read(ctx, client, req)
  local v, r = shield.kv.get("b", "kept")
  local keys = shield.kv.keys("b")
  local big = pcall(shield.kv.put, "b", "big", string.rep("x", 50))
  return { v = v, r = r, gone = shield.kv.get("b", "gone") == nil, keys = keys,
           next = shield.kv.put("b", "new", 1), big = big }
end
return M`
	world := func(maxValue int) *luatest.World {
		return luatest.StartWorld(t, map[string]string{
			"actors.yaml": luatest.ConfigYAML(storageYAML(data, fmt.Sprintf("{name: b, max_value_bytes: %d}", maxValue)),
				luatest.ActorYAML("a", "", "\n      - {id: 1, name: write, binding: write}\n      - {id: 2, name: read, binding: read}")),
			"a.lua": script,
		}, luatest.Options{})
	}
	w1 := world(40)
	var before struct{ R1, R3 float64 }
	r := w1.Ask(t, "a", 1, "{}")
	luatest.Expect(t, r, string(r.Body), "")
	mustJSON(t, r.Body, &before)
	stopWorld(t, w1)

	w2 := world(100) // a larger max_value_bytes: the bucket is updated
	var after struct {
		V    map[string]any
		R    float64
		Gone bool
		Keys []string
		Next float64
		Big  bool
	}
	r = w2.Ask(t, "a", 2, "{}")
	luatest.Expect(t, r, string(r.Body), "")
	mustJSON(t, r.Body, &after)
	if fmt.Sprint(after.V) != "map[bag:[sword] hp:7]" || after.R != before.R1 {
		t.Errorf("after the restart: value %v revision %v, want map[bag:[sword] hp:7] revision %v", after.V, after.R, before.R1)
	}
	if !after.Gone || strings.Join(after.Keys, ",") != "kept,last" {
		t.Errorf("after the restart: gone=%v keys=%v, want the deleted keys absent and keys [kept last]", after.Gone, after.Keys)
	}
	if after.Next <= before.R3 {
		t.Errorf("a write after the restart got revision %v, not above the last one before (%v)", after.Next, before.R3)
	}
	if !after.Big {
		t.Error("a 52-byte value was refused after max_value_bytes went from 40 to 100")
	}
}

// TestKVDataDirLocked: a second store cannot open a data_dir in use.
func TestKVDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Storage{DataDir: dir, Buckets: []config.Bucket{{Name: "b", MaxValueBytes: 100}}}
	a := kv.New(cfg, kv.Options{Logger: quiet()})
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	b := kv.New(cfg, kv.Options{Logger: quiet()})
	defer b.Close()
	err := b.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second store on one data_dir: %v, want in use", err)
	}
	a.Close()
	c := kv.New(cfg, kv.Options{Logger: quiet()})
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
}

// gated wraps a real store: a Get of key "gate" waits until open is
// closed or its context ends (then it fails as a silent store would).
type gated struct {
	luavm.KV
	open    chan struct{}
	waiting atomic.Int32
}

func (g *gated) Get(ctx context.Context, bucket, key string) ([]byte, uint64, error) {
	if key == "gate" {
		g.waiting.Add(1)
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	return g.KV.Get(ctx, bucket, key)
}

// startStore starts a store on an embedded server in a temp data_dir,
// closed at cleanup.
func startStore(t *testing.T, buckets ...config.Bucket) *kv.Store {
	t.Helper()
	if len(buckets) == 0 {
		buckets = []config.Bucket{{Name: "b", MaxValueBytes: 1000}}
	}
	s := kv.New(config.Storage{DataDir: t.TempDir(), Buckets: buckets}, kv.Options{Logger: quiet()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const gatedScript = `local M = {}
function M.r1(ctx, client, req) return (shield.kv.get("b", "gate")) end
function M.r2(ctx, client, req) return shield.kv.put("b", "other", 1) > 0 end
function M.r3(ctx, client, req)
  local ok, e = pcall(shield.kv.get, "b", "gate")
  return "not reached: the budget ends the handler"
end
return M`

// TestKVSuspendsOnlyItsTask: while one kv call waits on the store, the
// VM serves other messages, kv calls included.
func TestKVSuspendsOnlyItsTask(t *testing.T) {
	store := startStore(t)
	g := &gated{KV: store, open: make(chan struct{})}
	w := storeWorld(t, g, 5*time.Second, 3, gatedScript)
	id := w.Send(t, "a", 1, "{}")
	luatest.Wait(t, 5*time.Second, "the get reaches the store", func() bool { return g.waiting.Load() == 1 })
	luatest.Expect(t, w.Ask(t, "a", 2, "{}"), `true`, "")
	if n := len(w.Gateway.Responses(id)); n != 0 {
		t.Fatal("the waiting get answered early")
	}
	if _, err := store.Put(context.Background(), "b", "gate", []byte(`"opened"`)); err != nil {
		t.Fatal(err)
	}
	close(g.open)
	luatest.Expect(t, w.Await(t, id), `"opened"`, "")
}

// TestKVTimeout: a store that does not answer within the handler's budget
// is client_rpc.timeout, and the call is cancelled.
func TestKVTimeout(t *testing.T) {
	store := startStore(t)
	g := &gated{KV: store, open: make(chan struct{})}
	w := storeWorld(t, g, 300*time.Millisecond, 3, gatedScript)
	t0 := time.Now()
	luatest.Expect(t, w.Ask(t, "a", 3, "{}"), "client_rpc.timeout", "")
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("the timeout took %v, for a 300ms budget", d)
	}
	// The op was cancelled with its task: nothing is left pending.
	luatest.Wait(t, 2*time.Second, "the VM holds nothing in flight", func() bool { return w.Runtime.Busy() == 0 })
}
