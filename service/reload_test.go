package service_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/service"
)

// These tests drive service.Runtime.Reload directly, on a world's runtime
// with the recording gateway: the VM swap of SPEC §12 without the config
// around it (package bootstrap tests that, with a real gateway).

// versioned is a script at a version: version answers it, nap sleeps and
// then answers it, later arms a timer that pushes, crash panics the
// recording gateway, and count's counter crosses a reload.
func versioned(v string) string {
	return `local M = {}
local n = 0
function M.version(ctx, client, req) return "` + v + `" end
function M.nap(ctx, client, req) shield.sleep(300) return "` + v + `" end
function M.later(ctx, client, req)
  shield.timeout(200, function() shield.client_rpc.note(client, "fired") end)
  return "armed"
end
function M.crash(ctx, client, req) shield.client_rpc.note(client, "panic") return "survived" end
function M.count(ctx, client, req) n = n + 1 return n end
function M.reload_save(ctx) return {n = n} end
function M.reload_load(ctx, state) n = state.n end
return M`
}

const versionedRoutes = `
      - {id: 1, binding: version}
      - {id: 2, binding: nap}
      - {id: 3, binding: later}
      - {id: 4, binding: crash}
      - {id: 5, binding: count}
      - {id: 200, binding: note, direction: s2c}`

func reloadWorld(t *testing.T, instances int) *world {
	t.Helper()
	opts := fmt.Sprintf("instances: %d", instances)
	return startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", opts, versionedRoutes)),
		"a.lua":       versioned("v1"),
	})
}

// nextVMs compiles service a's VMs from the world's files as they are now,
// the way a reload does.
func nextVMs(t *testing.T, w *world) []*luavm.VM {
	t.Helper()
	cfg, err := config.Load(filepath.Join(w.Dir, "actors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	table, errs := descriptor.Merge(cfg)
	if len(errs) > 0 {
		t.Fatal(errs.Err())
	}
	a := &cfg.Actors[0]
	sa := service.Actor{Name: a.Name, Mailbox: a.Mailbox, Instances: a.Instances}
	for inst := range a.Instances {
		sa.VMs = append(sa.VMs, luavm.Spec{Service: a.Name, Instance: inst, Script: cfg.ScriptPath(a),
			ConfigFile: cfg.File, Routes: table.Owned(a.Name), HandlerTimeout: a.HandlerTimeout, MaxPending: a.MaxPending,
			Logger: slog.New(slog.NewJSONHandler(w.Logs, nil))})
	}
	vms, err := service.Compile([]service.Actor{sa})
	if err != nil {
		t.Fatal(err)
	}
	return vms[0]
}

func reload(t *testing.T, w *world, vms []*luavm.VM) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Runtime.Reload(ctx, []service.Change{{Service: "a", Mailbox: config.DefaultMailbox, VMs: vms}})
}

func rewrite(t *testing.T, w *world, script string) {
	t.Helper()
	testutil.WriteFile(t, filepath.Join(w.Dir, "a.lua"), script)
}

// TestSwapOldRunsFinish: a run asleep in the old VM when it is swapped
// answers with the old code, once; a message sent during the reload and
// after it goes to the new VM; a timer the old VM armed never fires; the
// count goes on through reload_save and reload_load; the generation is 2.
func TestSwapOldRunsFinish(t *testing.T) {
	w := reloadWorld(t, 1)
	w.Ask(t, "a", 5, "{}")
	w.Ask(t, "a", 5, "{}")
	napping := w.Send(t, "a", 2, "{}")
	armed := w.Ask(t, "a", 3, "{}")
	luatest.Expect(t, armed, `"armed"`, "")
	rewrite(t, w, versioned("v2"))
	swapped, err := reload(t, w, nextVMs(t, w))
	if err != nil || len(swapped) != 1 || swapped[0] != "a" {
		t.Fatalf("reload: %v %v", swapped, err)
	}
	luatest.Expect(t, w.Ask(t, "a", 1, "{}"), `"v2"`, "")
	luatest.Expect(t, w.Await(t, napping), `"v1"`, "")
	luatest.Expect(t, w.Ask(t, "a", 5, "{}"), "3", "")
	if got := w.Runtime.Generation("a"); got != 2 {
		t.Errorf("generation %d, want 2", got)
	}
	time.Sleep(300 * time.Millisecond) // past the old VM's timer
	w.Gateway.Mu.Lock()
	pushes := len(w.Gateway.Pushes)
	w.Gateway.Mu.Unlock()
	if pushes != 0 {
		t.Errorf("the old VM's timer fired after the swap: %d pushes", pushes)
	}
	if got := len(w.Gateway.Responses(napping)); got != 1 {
		t.Errorf("the request in flight got %d answers", got)
	}
}

// TestSwapQueuedDuringReload: requests that arrive while the old VM's
// reload_save and the new VM's reload_load run wait in the mailbox and
// are answered by the new code, in order, exactly once.
func TestSwapQueuedDuringReload(t *testing.T) {
	w := reloadWorld(t, 1)
	// A slow reload_load: the swap takes 200 ms.
	rewrite(t, w, strings.Replace(versioned("v2"), "function M.reload_load(ctx, state) n = state.n end",
		"function M.reload_load(ctx, state) shield.sleep(200) n = state.n end", 1))
	vms := nextVMs(t, w)
	done := make(chan error, 1)
	go func() { _, err := reload(t, w, vms); done <- err }()
	time.Sleep(50 * time.Millisecond)
	var ids []uint64
	for range 5 {
		ids = append(ids, w.Send(t, "a", 5, "{}"))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		luatest.Expect(t, w.Await(t, id), fmt.Sprint(i+1), "")
	}
}

// TestSwapFailsKeepsOld: a new VM whose reload_load raises is closed, and
// the old VMs of every instance take messages again with their state.
func TestSwapFailsKeepsOld(t *testing.T) {
	w := reloadWorld(t, 2)
	w.Ask(t, "a/1", 5, "{}")
	rewrite(t, w, strings.Replace(versioned("v2"), "function M.reload_load(ctx, state) n = state.n end",
		"function M.reload_load(ctx, state) if ctx.instance == 1 then error('instance 1 refuses') end end", 1))
	swapped, err := reload(t, w, nextVMs(t, w))
	if err == nil || !strings.Contains(err.Error(), "instance 1 refuses") || len(swapped) != 0 {
		t.Fatalf("reload: %v %v", swapped, err)
	}
	for _, target := range []string{"a/0", "a/1"} {
		luatest.Expect(t, w.Ask(t, target, 1, "{}"), `"v1"`, "")
	}
	luatest.Expect(t, w.Ask(t, "a/1", 5, "{}"), "2", "")
	if got := w.Runtime.Generation("a"); got != 1 {
		t.Errorf("generation %d, want 1", got)
	}
}

// TestCrashAfterReload: a VM that crashes after a reload comes back with
// the reloaded code (its generation), never with newer files on disk.
func TestCrashAfterReload(t *testing.T) {
	w := reloadWorld(t, 1)
	rewrite(t, w, versioned("v2"))
	if _, err := reload(t, w, nextVMs(t, w)); err != nil {
		t.Fatal(err)
	}
	rewrite(t, w, versioned("v3")) // on disk, not reloaded
	luatest.Expect(t, w.Ask(t, "a", 4, "{}"), "client_rpc.handler_failed", luatest.IncidentMsg.String())
	luatest.Wait(t, 5*time.Second, "the restart", func() bool { return w.metrics.get("a") == 1 })
	luatest.Expect(t, w.Ask(t, "a", 1, "{}"), `"v2"`, "")
	if got := w.Runtime.Generation("a"); got != 2 {
		t.Errorf("generation %d, want 2", got)
	}
}
