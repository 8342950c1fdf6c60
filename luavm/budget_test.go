package luavm_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/luatest"
)

// slowCallee is service b: a 10 s budget, far above its callers'.
const slowCallee = `local M = {}
function M.spin(ctx, tag)
  shield.log.info("callee deadline", "tag", tag, "deadline", ctx.deadline)
  while true do end
end
function M.relay(ctx, tag)
  shield.log.info("callee deadline", "tag", tag, "deadline", ctx.deadline)
  return shield.call("c", "spin", tag)
end
local last = 0 -- the latest deadline (unix ms) of a run of slow
function M.slow(ctx, ms)
  if ctx.deadline > last then last = ctx.deadline end
  shield.sleep(ms)
  return "late"
end
-- settle returns once every run of slow has ended, returned or stopped at
-- its deadline: its sleep wakes after the latest of those deadlines, and a
-- VM runs what is due (budgets and sleeps alike) in time order.
function M.settle(ctx)
  local wait = last + 2 - shield.now()
  if wait > 0 then shield.sleep(wait) end
  return true
end
function M.echo(ctx, v) return v end
return M`

// TestBudgets runs handlers past their 200 ms budget in every way one can,
// and checks that each ends in client_rpc.timeout at about the budget and
// that the VM serves the next request.
func TestBudgets(t *testing.T) {
	cases := []luaCase{
		{name: "endless loop", body: `while true do end`, want: "client_rpc.timeout"},
		{name: "endless loop inside pcall", body: `pcall(function() while true do end end) return "escaped"`, want: "client_rpc.timeout"},
		{name: "endless loop inside a coroutine", body: `coroutine.wrap(function() while true do end end)() return "escaped"`, want: "client_rpc.timeout"},
		{name: "endless loop in a pcall loop", body: `while true do pcall(function() while true do end end) end`, want: "client_rpc.timeout"},
		{name: "suspended in a call past the budget", body: `return shield.call("b", "slow", 600)`, want: "client_rpc.timeout"},
		{name: "pcall cannot catch its own timeout", body: `local ok, e = pcall(shield.call, "b", "slow", 600) return "caught"`, want: "client_rpc.timeout"},
		{name: "callee spinning on a 10s budget", body: `return shield.call("b", "spin", "direct")`, want: "client_rpc.timeout"},
		{name: "bare coroutine.yield", body: `coroutine.yield() return "resumed"`, want: "client_rpc.timeout"},
		{name: "yield of a value", body: `coroutine.yield("x") return "resumed"`, want: "client_rpc.timeout"},
		{name: "sleep forever", body: `shield.sleep(1e12) return "woke"`, want: "client_rpc.timeout"},
		{name: "sleep a little less than forever", body: `shield.sleep(300) return "woke"`, want: "client_rpc.timeout"},
		{name: "within budget", body: `shield.sleep(20) return "woke"`, want: `"woke"`},
	}
	a, aScript := caseActor("a", "handler_timeout: 200ms", `
function M.ping(ctx, client, req) return "pong" end`, cases)
	a += "      - {id: 100, binding: ping}\n"
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "handler_timeout: 10s", "")),
		"a.lua":       aScript, "b.lua": slowCallee,
	})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			luatest.Expect(t, w.Ask(t, "a", uint32(i+1), "{}"), c.want, "")
			took := time.Since(start)
			if c.want == "client_rpc.timeout" && (took < 190*time.Millisecond || took > patience*1500*time.Millisecond) {
				t.Fatalf("timed out after %v, want about 200ms", took)
			}
			// The VM serves the next request at once.
			start = time.Now()
			luatest.Expect(t, w.Ask(t, "a", 100, "{}"), `"pong"`, "")
			if took := time.Since(start); took > patience*250*time.Millisecond {
				t.Fatalf("next request answered after %v", took)
			}
		})
	}
	// b was stopped with its callers: it answers at once too.
	start := time.Now()
	luatest.Expect(t, w.Ask(t, "a", 100, "{}"), `"pong"`, "")
	if took := time.Since(start); took > patience*250*time.Millisecond {
		t.Fatalf("b answered after %v", took)
	}
}

// TestLateReply checks that a reply arriving after its caller timed out
// is dropped: one response per request, and the VM unharmed.
func TestLateReply(t *testing.T) {
	cases := []luaCase{
		{name: "slow", body: `return shield.call("b", "slow", req.ms)`},
		{name: "echo", body: `return shield.call("b", "echo", 1)`},
		{name: "settle", body: `return shield.call("b", "settle")`},
	}
	a, aScript := caseActor("a", "handler_timeout: 200ms", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "handler_timeout: 10s", "")),
		"a.lua":       aScript, "b.lua": slowCallee,
	})
	var ids []uint64
	for i := 0; i < 20; i++ {
		// Around the budget: some replies beat it, some are late.
		ids = append(ids, w.Send(t, "a", 1, `{"ms":`+strconv.Itoa(150+5*i)+`}`))
	}
	for _, id := range ids {
		r := w.Await(t, id)
		if r.Err != nil && r.Err.Code != "client_rpc.timeout" || r.Err == nil && string(r.Body) != `"late"` {
			t.Fatalf("request %d: %s %v", id, r.Body, r.Err)
		}
	}
	// Every late reply has come back once b answers settle: b sent each
	// of them when its run ended, before this answer, and a handles
	// replies in the order they come, so any second response a late one
	// made is recorded before this call's.
	luatest.Expect(t, w.Ask(t, "a", 3, "{}"), "true", "")
	for _, id := range ids {
		if n := len(w.Gateway.Responses(id)); n != 1 {
			t.Fatalf("request %d: %d responses", id, n)
		}
	}
	luatest.Expect(t, w.Ask(t, "a", 2, "{}"), "1", "")
}

// TestDeadlineTravels checks that a callee runs under its caller's
// remaining budget, hop after hop, and is stopped with it.
func TestDeadlineTravels(t *testing.T) {
	cases := []luaCase{
		{name: "direct", body: `shield.log.info("caller deadline", "deadline", ctx.deadline) return shield.call("b", "spin", "direct")`},
		{name: "two hops", body: `shield.log.info("caller deadline", "deadline", ctx.deadline) return shield.call("b", "relay", "hops")`},
		{name: "ping b", body: `return shield.call("b", "echo", "b")`},
		{name: "ping c", body: `return shield.call("c", "echo", "c")`},
	}
	a, aScript := caseActor("a", "handler_timeout: 200ms", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a,
			luatest.ActorYAML("b", "handler_timeout: 10s", ""),
			luatest.ActorYAML("c", "handler_timeout: 10s", "")),
		"a.lua": aScript, "b.lua": slowCallee, "c.lua": slowCallee,
	})
	for i, tag := range []string{"direct", "hops"} {
		start := time.Now()
		luatest.Expect(t, w.Ask(t, "a", uint32(i+1), "{}"), "client_rpc.timeout", "")
		if took := time.Since(start); took > patience*time.Second {
			t.Fatalf("%s: timed out after %v", tag, took)
		}
		// The callees were stopped at the caller's deadline, not their own
		// 10 s: they answer now.
		luatest.Expect(t, w.Ask(t, "a", 3, "{}"), `"b"`, "")
		luatest.Expect(t, w.Ask(t, "a", 4, "{}"), `"c"`, "")
		if took := time.Since(start); took > patience*time.Second {
			t.Fatalf("%s: callees free after %v", tag, took)
		}
	}
	callers := w.Logs.Records("caller deadline")
	callees := w.Logs.Records("callee deadline")
	if len(callers) != 2 || len(callees) != 3 {
		t.Fatalf("%d caller and %d callee deadline logs", len(callers), len(callees))
	}
	for _, r := range callees {
		want := callers[0]["deadline"].(float64)
		if r["tag"] == "hops" {
			want = callers[1]["deadline"].(float64)
		}
		if got := r["deadline"].(float64); got != want {
			t.Fatalf("callee %v (%v) ran until %v, caller until %v", r["service"], r["tag"], got, want)
		}
	}
}
