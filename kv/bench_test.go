package kv_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/kv"
	"github.com/shieldrpc/shield/service"
)

// benchScript is service b: route 1 runs req.n operations of kind req.op
// one after another, each a round trip out of the VM and back: a kv get
// or put on the embedded store (file storage), or a shield.call to the
// echo instance that req.key maps to.
const benchScript = `local M = {}
function M.run(ctx, client, req)
  local op, n, key = req.op, req.n, req.key
  local id = "k" .. ctx.instance .. "." .. req.i
  shield.kv.put("b", id, { hp = 100, name = "player", bag = { 1, 2, 3 } })
  if op == "put" then
    for i = 1, n do shield.kv.put("b", id, { hp = i, name = "player", bag = { 1, 2, 3 } }) end
  elseif op == "get" then
    for i = 1, n do shield.kv.get("b", id) end
  else
    for i = 1, n do shield.call({ service = "echo", key = key }, "echo", i) end
  end
  return n
end
return M`

const echoScript = `local M = {}
function M.echo(ctx, v) return v end
return M`

// keyFor returns a shard key that maps to instance i of n.
func keyFor(i, n int) string {
	for k := 0; ; k++ {
		if s := strconv.Itoa(k); service.Shard(s, n) == i {
			return s
		}
	}
}

// BenchmarkRoundTrips measures kv get and put round trips, next to a
// shield.call round trip, from 1 and from 8 VMs, with 1 and with 16
// requests in flight per VM (each request a loop of sequential round
// trips). Run: go test ./kv -run '^$' -bench RoundTrips -benchtime 20000x
func BenchmarkRoundTrips(b *testing.B) {
	for _, vms := range []int{1, 8} {
		w := luatest.StartWorld(b, map[string]string{
			"actors.yaml": luatest.ConfigYAML(storageYAML("", "{name: b}"),
				luatest.ActorYAML("b", fmt.Sprintf("instances: %d\nhandler_timeout: 60s\nmailbox: 4096", vms), "\n      - {id: 1, name: run, binding: run}"),
				luatest.ActorYAML("echo", fmt.Sprintf("instances: %d\nmailbox: 4096", vms), "")),
			"b.lua": benchScript, "echo.lua": echoScript,
		}, luatest.Options{})
		for _, op := range []string{"get", "put", "call"} {
			for _, inflight := range []int{1, 16} {
				b.Run(fmt.Sprintf("op=%s/vms=%d/inflight=%d", op, vms, inflight), func(b *testing.B) {
					per := max(b.N/(vms*inflight), 1)
					var ids []uint64
					start := time.Now()
					for v := 0; v < vms; v++ {
						for f := 0; f < inflight; f++ {
							id := w.Next.Add(1)
							body := fmt.Sprintf(`{"op":%q,"n":%d,"key":%q,"i":%d}`, op, per, keyFor(v, vms), f)
							w.Deliver(b, fmt.Sprintf("b/%d", v), &ingress.ClientIngress{Client: benchClient(id), Body: []byte(body), Codec: "json"})
							ids = append(ids, id)
						}
					}
					for _, id := range ids {
						r := w.AwaitFor(b, id, 5*time.Minute)
						if r.Err != nil {
							b.Fatalf("%s: %s", r.Err.Code, r.Err.Message)
						}
					}
					total := per * vms * inflight
					b.ReportMetric(float64(total)/time.Since(start).Seconds(), "trips/s")
				})
			}
		}
	}
}

func benchClient(id uint64) ingress.ClientContext {
	return ingress.ClientContext{Ref: egress.ClientRef{SessionID: id, Epoch: 1, Gateway: luatest.GatewayName}, Route: "run", RouteID: 1, RequestID: id}
}

// TestStoreFigures prints what the embedded store costs: its start on an
// empty and on a filled data_dir, and the memory and goroutines it adds.
// Run: SHIELD_KV_FIGURES=1 go test ./kv -run StoreFigures -v
func TestStoreFigures(t *testing.T) {
	if os.Getenv("SHIELD_KV_FIGURES") == "" {
		t.Skip("set SHIELD_KV_FIGURES=1 to print the figures")
	}
	dir := t.TempDir()
	cfg := config.Storage{DataDir: dir, Buckets: []config.Bucket{{Name: "players", MaxValueBytes: 65536}, {Name: "rooms", MaxValueBytes: 4096}}}
	heap0, rss0, g0 := memNow()
	t0 := time.Now()
	s := kv.New(cfg, kv.Options{Logger: quiet()})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cold := time.Since(t0)
	heap1, rss1, g1 := memNow()
	value := []byte(`{"hp":100,"name":"player","bag":[1,2,3],"pad":"` + strings.Repeat("x", 200) + `"}`)
	const keys = 100000
	for i := 0; i < keys; i++ {
		if _, err := s.Put(context.Background(), "players", "p"+strconv.Itoa(i), value); err != nil {
			t.Fatal(err)
		}
	}
	heap2, rss2, _ := memNow()
	s.Close()
	t1 := time.Now()
	s = kv.New(cfg, kv.Options{Logger: quiet()})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	warm := time.Since(t1)
	defer s.Close()
	t.Logf("start, empty data_dir: %v; with %d keys of %d bytes: %v", cold.Round(time.Microsecond), keys, len(value), warm.Round(time.Microsecond))
	t.Logf("started, empty: heap +%.1f MiB, RSS +%.1f MiB, goroutines +%d", mib(heap1-heap0), mib(rss1-rss0), g1-g0)
	t.Logf("after %d puts: heap +%.1f MiB, RSS +%.1f MiB over the start", keys, mib(heap2-heap1), mib(rss2-rss1))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// memNow reads the live heap (after a GC), the process's resident set and
// the goroutine count.
func memNow() (heap, rss int64, goroutines int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				rss = kb << 10
			}
		}
	}
	return int64(ms.HeapInuse), rss, runtime.NumGoroutine()
}
