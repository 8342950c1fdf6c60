package acceptance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// reloadScript answers count with its version and a per-session count
// that crosses reloads (reload_save, reload_load).
func reloadScript(version string) string {
	return `local M = {}
local counts = {}
function M.count(ctx, client, req)
  local k = tostring(client.session_id)
  counts[k] = (counts[k] or 0) + 1
  return {v = "` + version + `", n = counts[k]}
end
function M.reload_save(ctx) return counts end
function M.reload_load(ctx, state) counts = state end
return M`
}

const reloadProcessYAML = `node: {name: gw-reload}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: svc}
  admin: {address: "127.0.0.1:0"}
log: {format: json, level: info}
session: {rate_limit: {per_second: 0}, idle_timeout: 60s}
actors:
  - name: svc
    script: %s
    instances: 2
    rpc: {routes: [{id: 1, name: count, binding: count, requires_auth: false}]}
`

type counted struct {
	V string `json:"v"`
	N int    `json:"n"`
}

// TestSIGHUPReload: SIGHUP reloads the running process (SPEC §12): the log
// says "reload ok" and which service was reloaded, and the next request is
// served by the new code with the state it handed over. It logs the time
// from the signal to the first request the new code served.
func TestSIGHUPReload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	script := filepath.Join(t.TempDir(), "svc.lua")
	writeScript(t, script, reloadScript("v1"))
	p, game, _ := startProcess(t, fmt.Sprintf(reloadProcessYAML, script))
	c := dialPlain(t, game)
	if a := countOnce(t, c); a.V != "v1" || a.N != 1 {
		t.Fatalf("before: %+v", a)
	}
	writeScript(t, script, reloadScript("v2"))
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var a counted
	for {
		if a = countOnce(t, c); a.V == "v2" {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("no request served by the new code within 10s of SIGHUP")
		}
	}
	t.Logf("figure: SIGHUP to the first request served by the new code: %v", time.Since(start).Round(10*time.Microsecond))
	if a.N < 2 {
		t.Errorf("the first new-code answer %+v: the count did not carry over", a)
	}
	wiretest.Eventually(t, `"reload ok" logged`, func() bool {
		return p.count("reload ok", nil) == 1 && p.count("service reloaded", map[string]string{"service": "svc", "generation": "2"}) == 1
	})
	// A broken script: the log says "reload failed", v2 goes on.
	writeScript(t, script, "local M = {")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, `"reload failed" logged`, func() bool { return p.count("reload failed", nil) == 1 })
	if a := countOnce(t, c); a.V != "v2" {
		t.Errorf("after the failed reload: %+v", a)
	}
}

// TestReloadLatencyFigures (SHIELD_RELOAD_FIGURES=1) measures the longest
// request latency of 50 sessions sending continuously for 3 s, without a
// reload and with one SIGHUP reload in the middle, on a real process.
func TestReloadLatencyFigures(t *testing.T) {
	if os.Getenv("SHIELD_RELOAD_FIGURES") == "" {
		t.Skip("SHIELD_RELOAD_FIGURES=1 to measure")
	}
	script := filepath.Join(t.TempDir(), "svc.lua")
	writeScript(t, script, reloadScript("v1"))
	p, game, _ := startProcess(t, fmt.Sprintf(reloadProcessYAML, script))
	const sessions, span = 50, 3 * time.Second
	clients := make([]*client.Client, sessions)
	for i := range clients {
		clients[i] = dialPlain(t, game)
	}
	run := func(reload bool) (maxLat, p99 time.Duration, n int) {
		var mu sync.Mutex
		var lats []time.Duration
		var wg sync.WaitGroup
		end := time.Now().Add(span)
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for time.Now().Before(end) {
					t0 := time.Now()
					countOnce(t, c)
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lats = append(lats, mine...)
				mu.Unlock()
			}()
		}
		if reload {
			time.Sleep(span / 2)
			writeScript(t, script, reloadScript("v2"))
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Error(err)
			}
		}
		wg.Wait()
		slices.Sort(lats)
		return lats[len(lats)-1], lats[len(lats)*99/100], len(lats)
	}
	m0, p0, n0 := run(false)
	m1, p1, n1 := run(true)
	t.Logf("figure: 50 sessions, %v each: without a reload max %v p99 %v (%d requests); with one reload max %v p99 %v (%d requests)",
		span, m0, p0, n0, m1, p1, n1)
	if p.count("reload ok", nil) != 1 {
		t.Error("the reload did not go through")
	}
}

func writeScript(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func dialPlain(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{HeartbeatEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func countOnce(t *testing.T, c *client.Client) counted {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var a counted
	if err := c.Call(ctx, 1, struct{}{}, &a); err != nil {
		t.Errorf("count: %v", err)
	}
	return a
}
