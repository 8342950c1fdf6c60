package bootstrap_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
)

// The reload tests (SPEC §12) run a real server from files in a temp dir,
// reach it with real clients over loopback, rewrite the files and reload.

// reloadYAML is the game the reload tests start from: svc (two
// instances, every session's entry) with its settings and limits, and
// other, a second actor that a reload leaves alone.
const reloadYAML = `node:
  name: gw-r
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: svc}
  admin:
    address: "127.0.0.1:0"
    token: s3cret
session:
  idle_timeout: 60s
  rate_limit: {per_second: 0}
actors:
  - name: svc
    script: svc.lua
    instances: 2
    handler_timeout: 2s
    settings: {greeting: hello}
    rpc:
      routes:
        - {id: 1, name: hello, binding: hello, requires_auth: false}
        - {id: 2, name: slow, binding: slow, requires_auth: false}
        - {id: 3, name: count, binding: count, requires_auth: false}
  - name: other
    script: other.lua
    rpc:
      routes:
        - {id: 10, name: ping, binding: ping, owner_service: other, requires_auth: false}
`

// svcLua is svc's script at a version: hello answers it, slow sleeps the
// milliseconds asked and answers it, count counts per session, and the
// counts cross a reload through reload_save and reload_load.
func svcLua(version string) string {
	return `local M = {}
local counts = {}
function M.hello(ctx, client, req)
  return {v = "` + version + `", greeting = shield.settings().greeting}
end
function M.slow(ctx, client, req)
  shield.sleep(req.ms)
  return {v = "` + version + `"}
end
function M.count(ctx, client, req)
  local k = tostring(client.session_id)
  counts[k] = (counts[k] or 0) + 1
  return {v = "` + version + `", n = counts[k]}
end
function M.reload_save(ctx) return counts end
function M.reload_load(ctx, state) counts = state end
return M`
}

const otherLua = `local M = {}
function M.ping(ctx, client, req) return "pong" end
return M`

// reloadGame is a running server of reloadYAML and the folder it runs
// from, to rewrite.
type reloadGame struct {
	srv  *bootstrap.Server
	dir  string
	logs *luatest.Logs
}

func startReloadGame(t *testing.T, files map[string]string) *reloadGame {
	t.Helper()
	noLeak(t)
	all := map[string]string{"game.yaml": reloadYAML, "svc.lua": svcLua("v1"), "other.lua": otherLua}
	for k, v := range files {
		all[k] = v
	}
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, all)
	logs := &luatest.Logs{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, filepath.Join(dir, "game.yaml"), bootstrap.Options{
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return &reloadGame{srv: srv, dir: dir, logs: logs}
}

// write replaces a file of the game.
func (g *reloadGame) write(t *testing.T, name, content string) {
	t.Helper()
	testutil.WriteFile(t, filepath.Join(g.dir, name), content)
}

// edit rewrites game.yaml, replacing old with new (old must be there).
func (g *reloadGame) edit(t *testing.T, old, new string) {
	t.Helper()
	path := filepath.Join(g.dir, "game.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("game.yaml has no %q", old)
	}
	g.write(t, "game.yaml", strings.Replace(string(b), old, new, 1))
}

func (g *reloadGame) reload(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return g.srv.Reload(ctx)
}

func (g *reloadGame) dial(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, g.srv.Gateway.Addr("game").String(), client.Options{HeartbeatEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer is what svc's routes answer.
type answer struct {
	V        string `json:"v"`
	Greeting string `json:"greeting"`
	N        int    `json:"n"`
}

func call(t *testing.T, c *client.Client, route uint32, req any) (answer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var a answer
	err := c.Call(ctx, route, req, &a)
	return a, err
}

func mustCall(t *testing.T, c *client.Client, route uint32, req any) answer {
	t.Helper()
	a, err := call(t, c, route, req)
	if err != nil {
		t.Fatalf("route %d: %v", route, err)
	}
	return a
}

func (g *reloadGame) reloads(result string) int {
	return int(promtest.ToFloat64(g.srv.Metrics.Reloads.WithLabelValues(result)))
}

func (g *reloadGame) generation(service string) int {
	return int(promtest.ToFloat64(g.srv.Metrics.VMGenerations.WithLabelValues(service)))
}

// TestReloadNewCode: a changed handler answers with the new code on the
// next request, and the counts its reload_save handed over go on; the
// actor's generation is 2, the untouched actor's 1, the reload is counted
// and logged with the old and new generation.
func TestReloadNewCode(t *testing.T) {
	g := startReloadGame(t, nil)
	c := g.dial(t)
	if a := mustCall(t, c, 1, struct{}{}); a.V != "v1" || a.Greeting != "hello" {
		t.Fatalf("before: %+v", a)
	}
	for i := 1; i <= 3; i++ {
		if a := mustCall(t, c, 3, struct{}{}); a.N != i {
			t.Fatalf("count %d: %+v", i, a)
		}
	}
	g.write(t, "svc.lua", svcLua("v2"))
	if err := g.reload(t); err != nil {
		t.Fatal(err)
	}
	if a := mustCall(t, c, 1, struct{}{}); a.V != "v2" {
		t.Fatalf("after: %+v, want v2", a)
	}
	if a := mustCall(t, c, 3, struct{}{}); a.V != "v2" || a.N != 4 {
		t.Fatalf("count after the reload: %+v, want v2 and 4 (the state carried)", a)
	}
	if got := g.generation("svc"); got != 2 {
		t.Errorf("shield_vm_generation{svc} = %d, want 2", got)
	}
	if got := g.generation("other"); got != 1 {
		t.Errorf("shield_vm_generation{other} = %d, want 1", got)
	}
	if got := g.reloads("ok"); got != 1 {
		t.Errorf("reloads ok = %d, want 1", got)
	}
	recs := g.logs.Records("service reloaded")
	if len(recs) != 1 || recs[0]["service"] != "svc" || recs[0]["old_generation"] != 1.0 ||
		recs[0]["generation"] != 2.0 || recs[0]["reason"] != "code" {
		t.Errorf("reload log lines: %v", recs)
	}
	if len(g.logs.Records("reload ok")) != 1 {
		t.Error(`no "reload ok" line`)
	}
}

// TestReloadInFlight: a request in the old VM when the reload swaps it
// finishes there and is answered by the old code, once; the next request
// gets the new code.
func TestReloadInFlight(t *testing.T) {
	g := startReloadGame(t, nil)
	c := g.dial(t)
	mustCall(t, c, 1, struct{}{}) // the session is placed
	slow := make(chan answer, 1)
	go func() {
		a, _ := call(t, c, 2, map[string]int{"ms": 400})
		slow <- a
	}()
	time.Sleep(100 * time.Millisecond) // the request is asleep in the old VM
	g.write(t, "svc.lua", svcLua("v2"))
	if err := g.reload(t); err != nil {
		t.Fatal(err)
	}
	if a := mustCall(t, c, 1, struct{}{}); a.V != "v2" {
		t.Fatalf("a request after the reload: %+v, want v2", a)
	}
	if a := <-slow; a.V != "v1" {
		t.Fatalf("the request in flight: %+v, want v1 (the old code)", a)
	}
}

// TestReloadFailureKeepsOld: a script that does not compile, an init that
// raises and a reload_save that raises each leave the old code serving,
// with its generation and its state; the reload fails, is counted, and
// its error says what is wrong.
func TestReloadFailureKeepsOld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   string
	}{
		{"syntax error", "local M = {\nfunction", "svc.lua"},
		// Without reload_load, init runs.
		{"init raises", strings.Replace(strings.Replace(svcLua("v2"), "function M.reload_load(ctx, state) counts = state end", "", 1),
			"return M", "function M.init(ctx) error('no database') end\nreturn M", 1), "no database"},
		{"reload_load raises", strings.Replace(svcLua("v2"), "function M.reload_load(ctx, state) counts = state end",
			"function M.reload_load(ctx, state) error('bad state') end", 1), "bad state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startReloadGame(t, nil)
			c := g.dial(t)
			mustCall(t, c, 3, struct{}{})
			g.write(t, "svc.lua", tc.script)
			err := g.reload(t)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("reload: %v, want an error with %q", err, tc.want)
			}
			if a := mustCall(t, c, 3, struct{}{}); a.V != "v1" || a.N != 2 {
				t.Fatalf("after the failed reload: %+v, want v1 and 2", a)
			}
			if got := g.generation("svc"); got != 1 {
				t.Errorf("generation %d, want 1", got)
			}
			if g.reloads("failed") != 1 || g.reloads("ok") != 0 {
				t.Errorf("reloads failed %d ok %d, want 1 and 0", g.reloads("failed"), g.reloads("ok"))
			}
			if recs := g.logs.Records("reload failed"); len(recs) != 1 {
				t.Errorf(`"reload failed" lines: %v`, recs)
			}
			// The files fixed, the next reload goes through.
			g.write(t, "svc.lua", svcLua("v3"))
			if err := g.reload(t); err != nil {
				t.Fatal(err)
			}
			if a := mustCall(t, c, 3, struct{}{}); a.V != "v3" || a.N != 3 {
				t.Fatalf("after the fix: %+v, want v3 and 3", a)
			}
		})
	}
}

// TestReloadRefused: every change SPEC §12 leaves to a restart fails the
// reload with "reload: <what> changed; restart to change it", and nothing
// changes, not even the actors' code.
func TestReloadRefused(t *testing.T) {
	for _, tc := range []struct{ what, old, new string }{
		{"node", "name: gw-r", "name: gw-other"},
		{"network", `address: "127.0.0.1:0", entry_service: svc}`, `address: "127.0.0.1:0", entry_service: other}`},
		{"network", "token: s3cret", "token: other"},
		{"session", "idle_timeout: 60s", "idle_timeout: 30s"},
		{"log", "session:\n", "log: {level: debug}\nsession:\n"},
		{"lua", "session:\n", "lua: {max_string_bytes: 1000}\nsession:\n"},
		{"storage", "session:\n", "storage: {buckets: [{name: b}]}\nsession:\n"},
		{"instances of svc", "instances: 2", "instances: 3"},
		{"the set of actors", "  - name: other\n", "  - name: third\n    script: other.lua\n  - name: other\n"},
		{"the set of actors", "  - name: other\n    script: other.lua\n    rpc:\n      routes:\n        - {id: 10, name: ping, binding: ping, owner_service: other, requires_auth: false}\n", ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			g := startReloadGame(t, nil)
			c := g.dial(t)
			g.edit(t, tc.old, tc.new)
			g.write(t, "svc.lua", svcLua("v2"))
			err := g.reload(t)
			want := "reload: " + tc.what + " changed; restart to change it"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("reload: %v\nwant %q", err, want)
			}
			if got := bootstrap.ReloadErrors(err); len(got) != 1 {
				t.Errorf("errors %q, want just the one", got)
			}
			if a := mustCall(t, c, 1, struct{}{}); a.V != "v1" {
				t.Fatalf("after the refused reload: %+v, want v1", a)
			}
			if g.reloads("failed") != 1 {
				t.Errorf("reloads failed = %d, want 1", g.reloads("failed"))
			}
		})
	}
}

// TestReloadRoutesAndSettings: a new route answers after the reload and a
// removed one is route_not_found; a changed setting replaces the VMs (the
// new value is read); a route that only moved to another line, or a
// changed limit, replaces nothing, and the limit holds at once.
func TestReloadRoutesAndSettings(t *testing.T) {
	g := startReloadGame(t, nil)
	c := g.dial(t)
	mustCall(t, c, 1, struct{}{})

	// Limits only, and a route moved a line down: the VMs stay.
	g.edit(t, "handler_timeout: 2s", "handler_timeout: 300ms")
	g.edit(t, "        - {id: 1, name: hello, binding: hello, requires_auth: false}\n", "\n        - {id: 1, name: hello, binding: hello, requires_auth: false}\n")
	if err := g.reload(t); err != nil {
		t.Fatal(err)
	}
	if got := g.generation("svc"); got != 1 {
		t.Errorf("a limit change replaced the VMs: generation %d: %v", got, g.logs.Records("service reloaded"))
	}
	if _, err := call(t, c, 2, map[string]int{"ms": 1000}); !errors.Is(err, &codes.Error{Code: codes.Timeout}) {
		t.Errorf("a 1 s sleep under the new 300ms budget: %v, want client_rpc.timeout", err)
	}

	// A setting: the VMs are replaced and read it.
	g.edit(t, "greeting: hello", "greeting: welcome")
	if err := g.reload(t); err != nil {
		t.Fatal(err)
	}
	if a := mustCall(t, c, 1, struct{}{}); a.Greeting != "welcome" {
		t.Errorf("greeting after the reload: %+v", a)
	}
	if got := g.generation("svc"); got != 2 {
		t.Errorf("generation %d after a settings change, want 2", got)
	}

	// Routes: slow is gone, echo is new.
	g.edit(t, "        - {id: 2, name: slow, binding: slow, requires_auth: false}\n", "        - {id: 4, name: echo, binding: echo, requires_auth: false}\n")
	g.write(t, "svc.lua", strings.Replace(svcLua("v2"), "return M", "function M.echo(ctx, client, req) return req end\nreturn M", 1))
	if err := g.reload(t); err != nil {
		t.Fatal(err)
	}
	var echoed map[string]string
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Call(ctx, 4, map[string]string{"x": "y"}, &echoed); err != nil || echoed["x"] != "y" {
		t.Errorf("the new route: %v %v", echoed, err)
	}
	// A frame on a route not in the table is dropped and counted (SPEC §5).
	if err := c.Notify(2, map[string]int{"ms": 1}); err != nil {
		t.Fatal(err)
	}
	luatest.Wait(t, 5*time.Second, "the removed route's frame counted as route_not_found", func() bool {
		return promtest.ToFloat64(g.srv.Metrics.EdgeDropped.WithLabelValues("route_not_found")) == 1
	})
	if got := g.generation("other"); got != 1 {
		t.Errorf("other was replaced: generation %d", got)
	}
}

// TestReloadUnderLoad: 50 sessions send count continuously while the
// server reloads new code three times; every request is answered exactly
// once and handled exactly once: each session's counts come back 1, 2,
// 3, ... with no gap and no repeat, across the reloads.
func TestReloadUnderLoad(t *testing.T) {
	g := startReloadGame(t, nil)
	const sessions = 50
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	var mu sync.Mutex
	versions := map[string]int{}
	for i := range sessions {
		c := g.dial(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= 2000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				a, err := call(t, c, 3, struct{}{})
				if err != nil {
					errs <- fmt.Errorf("session %d request %d: %v", i, n, err)
					return
				}
				if a.N != n {
					errs <- fmt.Errorf("session %d: request %d counted %d", i, n, a.N)
					return
				}
				mu.Lock()
				versions[a.V]++
				mu.Unlock()
			}
		}()
	}
	for v := 2; v <= 4; v++ {
		time.Sleep(150 * time.Millisecond)
		g.write(t, "svc.lua", svcLua(fmt.Sprintf("v%d", v)))
		if err := g.reload(t); err != nil {
			t.Error(err)
		}
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for v := 1; v <= 4; v++ {
		if versions[fmt.Sprintf("v%d", v)] == 0 {
			t.Errorf("no request answered by v%d: %v", v, versions)
		}
	}
	if got := g.generation("svc"); got != 4 {
		t.Errorf("generation %d, want 4", got)
	}
}

var _ = config.RestartError

// TestReloadModuleChanged: a module the script requires is code too: a
// change to it alone replaces the VMs, and one to a file nobody loads
// replaces nothing.
func TestReloadModuleChanged(t *testing.T) {
	g := startReloadGame(t, map[string]string{
		"svc.lua":    strings.Replace(svcLua("v1"), `return {v = "v1", greeting`, `return {v = require("lib").version, greeting`, 1),
		"lib.lua":    `return {version = "lib1"}`,
		"unused.lua": `return {}`,
	})
	c := g.dial(t)
	if a := mustCall(t, c, 1, struct{}{}); a.V != "lib1" {
		t.Fatalf("before: %+v", a)
	}
	g.write(t, "unused.lua", `return {changed = true}`)
	if err := g.reload(t); err != nil {
		t.Fatal(err)
	}
	if got := g.generation("svc"); got != 1 {
		t.Errorf("a file nobody loads replaced the VMs: generation %d", got)
	}
	g.write(t, "lib.lua", `return {version = "lib2"}`)
	if err := g.reload(t); err != nil {
		t.Fatal(err)
	}
	if a := mustCall(t, c, 1, struct{}{}); a.V != "lib2" {
		t.Errorf("after the module changed: %+v", a)
	}
	if got := g.generation("svc"); got != 2 {
		t.Errorf("generation %d, want 2", got)
	}
}
