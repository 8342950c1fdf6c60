package luavm_test

import (
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

// TestMessagesBetweenVMsInOrder (SPEC §8): messages from one VM to another
// arrive in the order sent, sends and calls alike, to a plain service and
// to an instance addressed by key.
func TestMessagesBetweenVMsInOrder(t *testing.T) {
	cases := []luaCase{
		{name: "to a service", body: `
			for i = 1, 300 do
				if i % 7 == 0 then shield.call("b", "rec", i) else assert(shield.send("b", "rec", i)) end
			end
			return shield.call("b", "check", 300)`, want: `"in order"`},
		{name: "to an instance by key", body: `
			local to = { service = "p", key = "k1" }
			for i = 1, 300 do
				if i % 5 == 0 then shield.call(to, "rec", i) else assert(shield.send(to, "rec", i)) end
			end
			return shield.call(to, "check", 300)`, want: `"in order"`},
	}
	a, aScript := caseActor("a", "", "", cases)
	recorder := `local M = {}
local seen = {}
function M.rec(ctx, i) seen[#seen + 1] = i end
function M.check(ctx, n)
  if #seen ~= n then return "got " .. #seen end
  for i = 1, n do
    if seen[i] ~= i then return "message " .. seen[i] .. " arrived " .. i .. "th" end
  end
  seen = {}
  return "in order"
end
return M`
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", ""), luatest.ActorYAML("p", "instances: 3", "")),
		"a.lua":       aScript,
		"b.lua":       recorder,
		"p.lua":       recorder,
	})
	runCases(t, w, "a", cases)
}

// TestResumeAfterBudgetSpent (SPEC §6): a handler whose budget ran out
// while it waited (its call's reply sat in the mailbox while another
// handler kept the VM busy) answers client_rpc.timeout and runs no more of
// its code, although the reply came back.
func TestResumeAfterBudgetSpent(t *testing.T) {
	cases := []luaCase{
		{name: "waits for b", body: `local r = shield.call("b", "quick") shield.log.info("resumed after its budget") return r`},
		{name: "spins", body: `local stop = shield.now() + 2000 while shield.now() < stop do end return "spun"`},
	}
	a, aScript := caseActor("a", "handler_timeout: 300ms", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript,
		"b.lua":       `return { quick = function(ctx) shield.sleep(20) return "quick" end }`,
	})
	waiting := w.Send(t, "a", 1, "{}")
	spinning := w.Send(t, "a", 2, "{}")
	luatest.Expect(t, w.Await(t, waiting), "client_rpc.timeout", "")
	luatest.Expect(t, w.Await(t, spinning), "client_rpc.timeout", "")
	if n := len(w.Logs.Records("resumed after its budget")); n != 0 {
		t.Fatalf("the handler ran on after its budget (%d lines)", n)
	}
}
