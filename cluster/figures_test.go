package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bench"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestFigures measures the cluster next to one process and to the raw
// baseline, with real processes (go build ./cmd/gateway): the request
// round trip at 1 and 16 in flight on 50 connections, the CPU each node
// spends per request, and a push fan-out to 1,000 members over two
// gateways. It runs only with SHIELD_CLUSTER_FIGURES=1 (it takes a minute
// and wants the machine to itself).
func TestFigures(t *testing.T) {
	if os.Getenv("SHIELD_CLUSTER_FIGURES") == "" {
		t.Skip("set SHIELD_CLUSTER_FIGURES=1 to measure")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/gateway").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	testutil.WriteFiles(t, dir, map[string]string{"echo.lua": echoLua, "fan.lua": fanLua})
	natsPort := freePort(t)
	ports := map[string]int{}
	for _, k := range []string{"one", "one_admin", "gw", "gw_admin", "gw2", "gw2_admin", "svc_admin"} {
		ports[k] = freePort(t)
	}
	write := func(name, node, services, cluster string, listen, admin int) string {
		ls := ""
		if listen != 0 {
			ls = fmt.Sprintf("  listeners:\n    - {name: bench, address: \"127.0.0.1:%d\", entry_service: echo}\n    - {name: fan, address: \"127.0.0.1:%d\", entry_service: fan}\n", listen, listen+1)
		}
		svc := ""
		if services != "" {
			svc = "  services: " + services + "\n"
		}
		cfg := fmt.Sprintf("node:\n  name: %s\n%s%snetwork:\n%s  admin: {address: \"127.0.0.1:%d\"}\n%s", node, svc, cluster, ls, admin, figuresCommon)
		path := filepath.Join(dir, name)
		testutil.WriteFile(t, path, cfg)
		return path
	}
	embedded := fmt.Sprintf("cluster:\n  embedded: 127.0.0.1:%d\n", natsPort)
	remote := fmt.Sprintf("cluster:\n  nats: nats://127.0.0.1:%d\n", natsPort)
	one := write("one.yaml", "one", "", "", ports["one"], ports["one_admin"])
	gw := write("gw.yaml", "gw-a", "[]", embedded, ports["gw"], ports["gw_admin"])
	gw2 := write("gw2.yaml", "gw-b", "[]", remote, ports["gw2"], ports["gw2_admin"])
	svc := write("svc.yaml", "svc", "[echo, fan]", remote, 0, ports["svc_admin"])

	start := func(cfg string, admin int) *exec.Cmd {
		cmd := exec.Command(bin, "run", "-c", cfg)
		cmd.Stderr = nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
		within(t, 15*time.Second, "ready "+cfg, func() bool { return ready(admin) })
		return cmd
	}
	base, err := bench.NewEchoServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	start(one, ports["one_admin"])
	start(gw, ports["gw_admin"])
	start(svc, ports["svc_admin"])
	start(gw2, ports["gw2_admin"])

	ctx := context.Background()
	const conns, dur, warm = 50, 5 * time.Second, time.Second
	run := func(addr string, depth int) bench.Result {
		r, err := bench.Run(ctx, bench.Options{Addr: addr, Conns: conns, InFlight: depth, Duration: dur, Warmup: warm,
			Route: bench.RouteRaw, Body: bench.JSONBody})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cpu := func(admin int) float64 { return scrape(t, admin, "process_cpu_seconds_total") }
	var report strings.Builder
	fmt.Fprintf(&report, "\n%d connections, %v per run after %v warm-up, forward_raw echo, body %d bytes\n", conns, dur, warm, len(bench.JSONBody))
	for _, depth := range []int{1, 16} {
		b := run(base.Addr(), depth)
		fmt.Fprintf(&report, "P=%-2d baseline echo        %s\n", depth, b)
		c0 := cpu(ports["one_admin"])
		o := run(fmt.Sprintf("127.0.0.1:%d", ports["one"]), depth)
		c1 := cpu(ports["one_admin"])
		fmt.Fprintf(&report, "P=%-2d one process          %s  cpu %.1f us/req\n", depth, o, perReq(c1-c0, o, dur+warm))
		g0, s0 := cpu(ports["gw_admin"]), cpu(ports["svc_admin"])
		x := run(fmt.Sprintf("127.0.0.1:%d", ports["gw"]), depth)
		g1, s1 := cpu(ports["gw_admin"]), cpu(ports["svc_admin"])
		fmt.Fprintf(&report, "P=%-2d gateway->NATS->svc   %s  cpu gateway %.1f + service node %.1f us/req\n", depth, x,
			perReq(g1-g0, x, dur+warm), perReq(s1-s0, x, dur+warm))
		fmt.Fprintf(&report, "P=%-2d cross-node / one process %.2fx, one process / baseline %.2fx\n", depth, x.RPS()/o.RPS(), o.RPS()/b.RPS())
	}
	ingressOut := scrape(t, ports["gw_admin"], `shield_cluster_messages_total{dir="out",kind="ingress"}`)
	answersIn := scrape(t, ports["gw_admin"], `shield_cluster_messages_total{dir="in",kind="answer"}`)
	requests := scrape(t, ports["gw_admin"], `shield_requests_total{code="ok",route="raw_echo",service="echo"}`)
	fmt.Fprintf(&report, "NATS messages per request on the gateway: %.3f out, %.3f in\n", ingressOut/requests, answersIn/requests)
	fanOut(t, &report, ports["gw"]+1, ports["gw2"]+1, ports["gw_admin"])
	t.Log(report.String())
}

func perReq(cpuSeconds float64, r bench.Result, wall time.Duration) float64 {
	total := r.RPS() * wall.Seconds()
	return cpuSeconds / total * 1e6
}

// fanOut connects 1,000 members, half on each gateway, to fan on the
// service node, then has it push to all of them, round after round.
func fanOut(t *testing.T, report *strings.Builder, portA, portB, adminA int) {
	const members, rounds = 1000, 30
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got [rounds + 1]atomic.Int64
	clients := make([]*client.Client, members)
	var wg sync.WaitGroup
	for i := range members {
		port := portA
		if i%2 == 1 {
			port = portB
		}
		c, err := client.Dial(ctx, fmt.Sprintf("127.0.0.1:%d", port), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.OnPush(12, func(body []byte) {
			n, _ := strconv.Atoi(strings.Trim(strings.TrimPrefix(string(body), `{"seq":`), "}"))
			if n > 0 && n <= rounds {
				got[n].Add(1)
			}
		})
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Call(ctx, 10, nil, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	pushesBefore := scrape(t, adminA, `shield_cluster_messages_total{dir="in",kind="push"}`)
	lat := bench.NewHistogram()
	begin := time.Now()
	for r := 1; r <= rounds; r++ {
		t0 := time.Now()
		if err := clients[0].Call(ctx, 11, map[string]int{"seq": r}, nil); err != nil {
			t.Fatal(err)
		}
		for got[r].Load() < members {
			if ctx.Err() != nil {
				t.Fatalf("round %d: %d of %d pushes", r, got[r].Load(), members)
			}
			time.Sleep(100 * time.Microsecond)
		}
		lat.Record(time.Since(t0))
	}
	el := time.Since(begin)
	pushesA := scrape(t, adminA, `shield_cluster_messages_total{dir="in",kind="push"}`) - pushesBefore
	fmt.Fprintf(report, "fan-out to %d members over two gateways: %d rounds, p50 %v, max %v per round (blast to last push), %.0f pushes/s delivered; NATS push messages into gateway A per round: %.1f\n",
		members, rounds, lat.Quantile(0.5), lat.Max(), float64(members*rounds)/el.Seconds(), pushesA/rounds)
}

func ready(admin int) bool {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", admin))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// scrape reads one sample (name with its labels, as /metrics prints it).
func scrape(t *testing.T, admin int, sample string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", admin))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

// echoLua logs each session in on its first request (a bind to the echo
// instance its player id maps to), so that the load runs on bound
// sessions: an unauthenticated session's frames are checked one at a time
// (SPEC §5), which would make every depth 1.
const echoLua = `local M = {}
function M.echo(ctx, client, req)
  if client.player_id == nil then
    shield.client.bind(client, "p" .. client.session_id, "echo")
  end
  return req
end
return M
`

const fanLua = `local M = {}
local members = {}
function M.join(ctx, client, req) members[#members + 1] = shield.client.ref(client); return {n = #members} end
function M.blast(ctx, client, req)
  local n = shield.client_rpc.fan_push(members, {seq = req.seq})
  return {accepted = n}
end
return M
`

const figuresCommon = `log: {level: warn}
session:
  max_inflight: 256
  outbound_queue: 1024
  idle_timeout: 600s
  rate_limit: {per_second: 0}
actors:
  - name: echo
    script: echo.lua
    instances: 2
    mailbox: 65536
    rpc:
      routes:
        - {id: 1, name: raw_echo, binding: echo, requires_auth: false, action: forward_raw}
        - {id: 2, name: json_echo, binding: echo, requires_auth: false}
  - name: fan
    script: fan.lua
    rpc:
      routes:
        - {id: 10, name: fan_join, binding: join, requires_auth: false}
        - {id: 11, name: fan_blast, binding: blast, requires_auth: false}
        - {id: 12, name: fan_push, binding: fan_push, direction: s2c}
`
