package bootstrap_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/testutil"
)

// noLeak fails t if, once the test is over, more goroutines run than
// before it started (testutil.CheckGoroutines, under this package's name).
func noLeak(t testing.TB) {
	t.Helper()
	testutil.CheckGoroutines(t)
}

// writeGame writes a config and its scripts into a fresh folder and
// returns the config's path. Scripts are named relative to the config.
func writeGame(t testing.TB, yaml string, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "game.yaml")
	testutil.WriteFile(t, path, yaml)
	testutil.WriteFiles(t, dir, scripts)
	return path
}

// compileErrors compiles path, expects it to fail with config.Errors and
// returns their messages.
func compileErrors(t testing.TB, path string, opts bootstrap.Options) []string {
	t.Helper()
	rep, err := bootstrap.Compile(path, opts)
	if err == nil {
		rep.Close()
		t.Fatal("Compile succeeded, want errors")
	}
	if rep != nil {
		t.Errorf("Compile returned a report with its error")
	}
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v (%T) is not config.Errors", err, err)
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return msgs
}

// expectErrors checks that msgs are exactly want, in order, each message
// containing every piece of its entry.
func expectErrors(t testing.TB, msgs []string, want ...[]string) {
	t.Helper()
	if len(msgs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(msgs), len(want), strings.Join(msgs, "\n"))
	}
	for i, pieces := range want {
		for _, p := range pieces {
			if !strings.Contains(msgs[i], p) {
				t.Errorf("error %d = %q\nwant it to contain %q", i, msgs[i], p)
			}
		}
	}
}

// quiet is a logger that drops everything: scripts may log at load.
func quiet() bootstrap.Options {
	return bootstrap.Options{Logger: slog.New(slog.DiscardHandler)}
}

// header is a listener and the opening of the actors list: actors start
// at line 5.
const header = `network:
  listeners:
    - {name: game, address: ":7000", entry_service: auth}
actors:
`

// authActor is an actor with one c2s route on line 7 and script auth.lua.
const authActor = `  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 1001, name: login, binding: login}]}
`

const authLua = "local M = {}\nfunction M.login(ctx, client, req) return {} end\nreturn M\n"

func TestCompileExample(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	for _, name := range []string{"actors.yaml", "services/auth.lua", "services/player.lua", "services/room.lua", "services/arena.lua"} {
		data, err := os.ReadFile(filepath.Join("..", "configs", name))
		if err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, filepath.Join(dir, name), string(data))
	}
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	// 9 of the actors and Shield's 5 room routes (the arena is a room kind).
	if rep.Table.Len() != 14 {
		t.Errorf("%d routes, want 14", rep.Table.Len())
	}
	if !rep.Runtime.IsRoomKind("arena") {
		t.Error("the arena is not a room kind")
	}
	if rep.KV == nil {
		t.Error("the example's storage block gave no store")
	}
	// Compiling (gateway check) starts nothing: the store's data_dir is
	// made by the runtime's start only.
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("compile made the store's data_dir: %v", err)
	}
	rt := rep.Runtime
	for svc, n := range map[string]int{"auth": 1, "player": 2, "room": 1} {
		if got := rt.VMs(svc); got != n {
			t.Fatalf("%s: %d VMs, want %d", svc, got, n)
		}
		for i := 0; i < n; i++ {
			if vm := rt.VM(svc, i); vm == nil || vm.Service() != svc || vm.Instance() != i {
				t.Errorf("%s VM %d = %v", svc, i, vm)
			}
		}
	}
	if len(rt.Services()) != 3 {
		t.Errorf("VMs of %d services, want 3", len(rt.Services()))
	}
	auth, player, room := rt.VM("auth", 0), rt.VM("player", 1), rt.VM("room", 0)
	if !auth.HasHandler(1001) || auth.HasHandler(2001) {
		t.Error("auth compiles exactly login")
	}
	if !player.HasHandler(2001) || !player.HasHandler(2002) || !player.HasHandler(2003) || player.Helper("position") != nil || !player.HasHook("init") {
		t.Error("player compiles move, join_room and profile, has init, and does not push position")
	}
	if h := room.Helper("position"); h == nil || h.ID != 2101 || room.HasHandler(2101) {
		t.Errorf("room helper position = %+v; room must push position and handle nothing", h)
	}
	if h := room.Helper("left"); h == nil || h.ID != 2102 {
		t.Errorf("room helper left = %+v; room must push left", h)
	}
}

func TestMissingScript(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+authActor, nil)
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs, []string{path + ":6:", `actor "auth"`, "script:", filepath.Join(filepath.Dir(path), "auth.lua")})
}

func TestLuaSyntaxError(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+authActor, map[string]string{
		"auth.lua": "local M = {}\nfunction M.login(ctx, client, req)\n  return {\nend\nreturn M\n",
	})
	script := filepath.Join(filepath.Dir(path), "auth.lua")
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs, []string{path + ":6:", `actor "auth"`, script + ":4:"})
}

func TestScriptReturnsNumber(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+authActor, map[string]string{"auth.lua": "return 42\n"})
	script := filepath.Join(filepath.Dir(path), "auth.lua")
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs, []string{script + ": ", `actor "auth"`, "script must return its module table, got number"})
}

func TestScriptReturnsNothing(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+authActor, map[string]string{"auth.lua": "local M = {}\n"})
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs, []string{`actor "auth"`, "script must return its module table, got nil"})
}

func TestScriptRaisesAtLoad(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+authActor, map[string]string{
		"auth.lua": "local M = {}\n\nerror(\"no database\")\nreturn M\n",
	})
	script := filepath.Join(filepath.Dir(path), "auth.lua")
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs, []string{`actor "auth"`, "script raised while loading", script + ":3:", "no database"})
}

// TestScriptLoopsAtLoad: a script that never returns is stopped by the load
// budget (luavm.DefaultLoadTimeout, 5 s: bootstrap.Options has no knob to
// shorten it) and reported; its VM is closed.
func TestScriptLoopsAtLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 5 s load budget")
	}
	noLeak(t)
	path := writeGame(t, header+authActor, map[string]string{
		"auth.lua": "local M = {}\nwhile true do end\nreturn M\n",
	})
	start := time.Now()
	msgs := compileErrors(t, path, quiet())
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("stopped after %v", d)
	}
	expectErrors(t, msgs, []string{`actor "auth"`, "script did not finish loading within 5s"})
}

// TestHandlerMissing: a c2s or bidi binding that is not a function of the
// module fails with client_rpc.handler_missing, naming the actor, the
// route, the binding and the script; every one is reported.
func TestHandlerMissing(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+`  - name: auth
    script: auth.lua
    rpc:
      routes:
        - {id: 1001, name: login, binding: login}
        - {id: 1002, name: logout, binding: logout}
        - {id: 1003, binding: config, direction: bidi}
`, map[string]string{
		"auth.lua": "local M = {config = {}}\nfunction M.login() end\nreturn M\n",
	})
	script := filepath.Join(filepath.Dir(path), "auth.lua")
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs,
		[]string{path + ":10:", `actor "auth"`, "route 1002 (logout)", `client_rpc.handler_missing: binding "logout" is not a function of the module in ` + script, "(it is nil)"},
		[]string{path + ":11:", `actor "auth"`, "route 1003: ", `client_rpc.handler_missing: binding "config"`, script, "(it is table)"},
	)
}

// TestS2CNeedsNoFunction: an s2c binding names a push helper, not a module
// function.
func TestS2CNeedsNoFunction(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+`  - name: auth
    script: auth.lua
    rpc:
      routes:
        - {id: 1001, name: login, binding: login}
        - {id: 1002, name: kicked, binding: push_kicked, direction: s2c}
`, map[string]string{"auth.lua": authLua})
	rep, err := bootstrap.Compile(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	vm := rep.Runtime.VM("auth", 0)
	if h := vm.Helper("push_kicked"); h == nil || h.ID != 1002 || vm.HasHandler(1002) {
		t.Errorf("helper push_kicked = %+v, handler = %v", h, vm.HasHandler(1002))
	}
}

// TestOwnerCompiles: a route owned by another service is compiled by the
// owner's VMs only. The declaring actor's script need not have the
// function; the owner's must.
func TestOwnerCompiles(t *testing.T) {
	noLeak(t)
	yaml := header + authActor + `  - name: room
    script: room.lua
    instances: 2
  - name: player
    script: player.lua
    rpc:
      routes:
        - {id: 3001, name: enter, binding: enter, owner_service: room}
`
	roomLua := "local M = {}\nfunction M.enter() end\nreturn M\n"
	path := writeGame(t, yaml, map[string]string{"auth.lua": authLua, "room.lua": roomLua, "player.lua": "return {}\n"})
	rep, err := bootstrap.Compile(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rep.Runtime.VMs("room"); i++ {
		if !rep.Runtime.VM("room", i).HasHandler(3001) {
			t.Errorf("room VM %d did not compile route 3001", i)
		}
	}
	if rep.Runtime.VM("player", 0).HasHandler(3001) {
		t.Error("player compiled a route owned by room")
	}
	rep.Close()

	// The owner without the function fails, and the message names it.
	path = writeGame(t, yaml, map[string]string{"auth.lua": authLua, "room.lua": "return {}\n", "player.lua": "return {}\n"})
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs, []string{path + ":15:", `actor "room"`, "route 3001 (enter)", "client_rpc.handler_missing", filepath.Join(filepath.Dir(path), "room.lua")})
}

// TestLayersReportedTogether: layer-1 and layer-2 errors come out of one
// run, and no VM is spawned (no script runs) when either fails.
func TestLayersReportedTogether(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+`  - name: auth
    script: auth.lua
    mailbox: 0
    rpc: {routes: [{id: 1001, name: login, binding: login}]}
  - name: lobby
    script: lobby.lua
    rpc: {routes: [{id: 1001, name: enter, binding: enter, owner_service: hall}]}
`, map[string]string{
		"auth.lua":  "print('auth loaded')\n" + authLua,
		"lobby.lua": "print('lobby loaded')\nreturn {}\n",
	})
	var logs bytes.Buffer
	msgs := compileErrors(t, path, bootstrap.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	expectErrors(t, msgs,
		[]string{path + ":7:", `actor "auth"`, "mailbox: 0 is out of range"},
		[]string{path + ":11:", `actor "lobby"`, "route 1001 (enter)", `rpc route conflict: id 1001`, `actor "auth"`, `actor "lobby"`},
		[]string{path + ":11:", `actor "lobby"`, `owner_service "hall" is not an actor`},
	)
	if logs.Len() != 0 {
		t.Errorf("a script ran although layers 1 and 2 failed:\n%s", logs.String())
	}
}

// TestEveryVMErrorReported: layer 3 reports the errors of every actor in
// one run, once per actor however many instances it has.
func TestEveryVMErrorReported(t *testing.T) {
	noLeak(t)
	path := writeGame(t, header+authActor+`  - name: room
    script: room.lua
    instances: 3
`, map[string]string{"auth.lua": "return {}\n", "room.lua": "return 1\n"})
	msgs := compileErrors(t, path, quiet())
	// Sorted by file: the config's errors, then the scripts'.
	expectErrors(t, msgs,
		[]string{path + ":7:", `actor "auth"`, "client_rpc.handler_missing"},
		[]string{filepath.Join(filepath.Dir(path), "room.lua") + ": ", `actor "room"`, "script must return its module table"},
	)
}

func TestConfigMissing(t *testing.T) {
	noLeak(t)
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := bootstrap.Compile(path, quiet())
	if err == nil || !strings.Contains(err.Error(), path+": cannot read configuration") {
		t.Errorf("Compile = %v", err)
	}
}

// BenchmarkCompile100x100 runs all three layers on 100 actors of 100 routes
// each, every script defining its 100 handlers, and closes the VMs.
func BenchmarkCompile100x100(b *testing.B) {
	const actors, routes = 100, 100
	var cfg strings.Builder
	cfg.WriteString("network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: svc0}\nactors:\n")
	scripts := map[string]string{}
	for a := range actors {
		fmt.Fprintf(&cfg, "  - name: svc%d\n    script: services/svc%d.lua\n    rpc:\n      routes:\n", a, a)
		var lua strings.Builder
		lua.WriteString("local M = {}\n")
		for r := range routes {
			id := a*routes + r + 1
			fmt.Fprintf(&cfg, "        - {id: %d, name: r%d, binding: h%d}\n", id, id, r)
			fmt.Fprintf(&lua, "function M.h%d(ctx, client, req) return req end\n", r)
		}
		lua.WriteString("return M\n")
		scripts[fmt.Sprintf("services/svc%d.lua", a)] = lua.String()
	}
	path := writeGame(b, cfg.String(), scripts)
	opts := quiet()
	for b.Loop() {
		rep, err := bootstrap.Compile(path, opts)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Table.Len() != actors*routes {
			b.Fatalf("%d routes", rep.Table.Len())
		}
		rep.Close()
	}
}
