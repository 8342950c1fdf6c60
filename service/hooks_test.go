package service_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
)

const hooks = `local M = {}
local ready = false
function M.init(ctx)
  shield.sleep(20) -- an init may suspend; Start waits for it
  local name, inst = shield.self()
  shield.log.info("init", "ctx_service", ctx.service, "inst", ctx.instance, "self", name .. "/" .. inst,
    "peer", shield.call("b", "echo", "peer up"))
  ready = true
end
function M.stop(ctx)
  shield.log.info("stop", "inst", ctx.instance, "peer", shield.call("b", "echo", "peer still up"))
end
function M.client_disconnected(ctx, client, reason)
  shield.log.info("disconnected", "session_id", client.session_id, "epoch", client.epoch,
    "player_id", client.player_id, "gateway", client.gateway, "reason", reason,
    "route", client.route, "inst", ctx.instance)
end
function M.ready(ctx, client, req) return ready end
return M`

// TestHooks checks init, stop and client_disconnected (SPEC §8).
func TestHooks(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			luatest.ActorYAML("a", "instances: 3", "\n      - {id: 1, binding: ready}"),
			luatest.ActorYAML("b", "", "")),
		"a.lua": hooks,
		"b.lua": `local M = {} function M.echo(ctx, v) return v end return M`,
	})
	// init ran once per VM, before Start returned.
	inits := w.Logs.Records("init")
	if len(inits) != 3 {
		t.Fatalf("%d inits", len(inits))
	}
	seen := map[float64]bool{}
	for _, r := range inits {
		inst := r["inst"].(float64)
		seen[inst] = true
		if r["service"] != "a" || r["ctx_service"] != "a" || r["instance"] != inst || r["self"] != "a/"+strconv.Itoa(int(inst)) || r["peer"] != "peer up" {
			t.Fatalf("init record %v", r)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("init instances %v", seen)
	}
	for i := 0; i < 3; i++ {
		luatest.Expect(t, w.Ask(t, "a/"+strconv.Itoa(i), 1, "{}"), "true", "")
	}

	// client_disconnected, with the ref's fields and the reason.
	ref := egress.ClientRef{SessionID: 77, Epoch: 5, PlayerID: "p7", Gateway: "gw-test"}
	w.Runtime.Control(egress.ActorID{Service: "a", Instance: 2}, &ingress.Disconnected{Ref: ref, Reason: "kicked"})
	w.Runtime.Control(egress.ActorID{Service: "a", Instance: 0}, &ingress.Disconnected{Ref: egress.ClientRef{SessionID: 78, Epoch: 1, Gateway: "gw-test"}, Reason: "closed"})
	got := w.Logs.WaitRecords(t, "disconnected", 2)
	for _, r := range got {
		if r["session_id"] == 77.0 {
			// The line is about the session: its ids come first, once
			// each, and the script's own keys of those names are renamed.
			if r["epoch"] != 5.0 || r["player_id"] != "p7" || r["gateway"] != "gw-test" || r["reason"] != "kicked" || r["inst"] != 2.0 || r["route"] != "nil" ||
				r["arg.session_id"] != 77.0 || r["arg.player_id"] != "p7" {
				t.Fatalf("disconnected record %v", r)
			}
		} else if r["player_id"] != nil || r["reason"] != "closed" || r["arg.player_id"] != "nil" {
			t.Fatalf("disconnected record %v", r)
		}
	}

	// stop runs exactly once per VM, while the other services still serve.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Runtime.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Runtime.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stops := w.Logs.Records("stop")
	if len(stops) != 3 {
		t.Fatalf("%d stops", len(stops))
	}
	for _, r := range stops {
		if r["peer"] != "peer still up" {
			t.Fatalf("stop record %v", r)
		}
	}
}

// TestInitFailureFailsStart checks that an init that raises fails Start,
// that the error names the instance, and that nothing is left running.
func TestInitFailureFailsStart(t *testing.T) {
	for _, c := range []struct{ name, init, want string }{
		{"raises", `error("no database")`, "no database"},
		{"raises a business error", `shield.error("boot.failed", "nope")`, "boot.failed"},
		{"times out", `while true do end`, "client_rpc.timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := tryWorld(t, map[string]string{
				"actors.yaml": luatest.ConfigYAML("",
					luatest.ActorYAML("a", "instances: 2\nhandler_timeout: 200ms", "\n      - {id: 1, binding: go}"),
					luatest.ActorYAML("b", "", "")),
				"a.lua": `local M = {}
function M.init(ctx) if ctx.instance == 1 then ` + c.init + ` end end
function M.go() return 1 end
return M`,
				"b.lua": `return { stop = function() shield.log.info("b stopped") end }`,
			})
			if err == nil {
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), "a instance 1: init") || !strings.Contains(err.Error(), c.want) && !strings.Contains(err.Error(), "incident") {
				t.Fatalf("Start: %v", err)
			}
		})
	}
}
