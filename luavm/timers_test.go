package luavm_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/luatest"
)

// TestTimers covers shield.timeout, cancel, sleep and now.
func TestTimers(t *testing.T) {
	cases := []luaCase{
		{name: "callbacks fire in time order", body: `
			local order = {}
			shield.timeout(60, function() order[#order + 1] = 60 end)
			shield.timeout(20, function() order[#order + 1] = 20 end)
			shield.timeout(40, function() order[#order + 1] = 40 end)
			shield.sleep(120)
			return order`, want: `[20,40,60]`},
		{name: "callbacks due together fire in the order set", body: `
			local order = {}
			for i = 1, 5 do shield.timeout(10, function() order[#order + 1] = i end) end
			shield.sleep(60)
			return order`, want: `[1,2,3,4,5]`},
		{name: "cancel prevents the callback", body: `
			local fired = false
			local id = shield.timeout(20, function() fired = true end)
			local first, second = shield.cancel(id), shield.cancel(id)
			shield.sleep(60)
			return { fired = fired, first = first, second = second }`, want: `{"fired":false,"first":true,"second":false}`},
		{name: "cancel after the callback ran is false", body: `
			local id = shield.timeout(1, function() end)
			shield.sleep(30)
			return shield.cancel(id)`, want: `false`},
		{name: "cancel of an unknown id is false", body: `return shield.cancel(123456789)`, want: `false`},
		{name: "timeout ids differ", body: `
			local a, b = shield.timeout(1000, function() end), shield.timeout(1000, function() end)
			shield.cancel(a) shield.cancel(b)
			return { differ = a ~= b, number = type(a) == "number" }`, want: `{"differ":true,"number":true}`},
		{name: "a callback may call", body: `
			local got
			shield.timeout(1, function() got = shield.call("b", "echo", "from timer") end)
			shield.sleep(100)
			return got`, want: `"from timer"`},
		{name: "a callback that raises is logged and harmless", body: `
			shield.timeout(1, function() error("timer boom") end)
			shield.sleep(30)
			return "ok"`, want: `"ok"`},
		{name: "sleep returns after about its time", body: `
			local t0 = shield.now()
			shield.sleep(50)
			local d = shield.now() - t0
			return { ok = d >= 49 and d < 500 }`, want: `{"ok":true}`},
		{name: "sleep(0) and a negative sleep return", body: `shield.sleep(0) shield.sleep(-5) return "ok"`, want: `"ok"`},
		{name: "timeout needs a function", body: `shield.timeout(10, "nope")`, want: "client_rpc.handler_failed"},
		{name: "now is unix ms", body: `return shield.now()`},
		// Last: its callback holds the VM for a whole budget, which would
		// push the cases after it past their own budgets.
		{name: "a callback that loops is stopped at its budget", body: `
			shield.timeout(1, function() while true do end end)
			return "ok"`, want: `"ok"`},
	}
	a, aScript := caseActor("a", "handler_timeout: 300ms", `function M.ping() return "pong" end`, cases)
	a += "      - {id: 100, binding: ping}\n"
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript, "b.lua": callee,
	})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := time.Now().UnixMilli()
			r := w.Ask(t, "a", uint32(i+1), "{}")
			if c.name == "now is unix ms" {
				now, err := strconv.ParseInt(string(r.Body), 10, 64)
				if err != nil || now < before || now > time.Now().UnixMilli() {
					t.Fatalf("shield.now() = %s, want between %d and now", r.Body, before)
				}
				return
			}
			luatest.Expect(t, r, c.want, c.msg)
		})
	}
	// The looping callback was stopped (logged as a timeout), and the VM
	// serves.
	luatest.Wait(t, 5*time.Second, "the looping callback's timeout", func() bool {
		for _, r := range w.Logs.Records("task failed") {
			if r["code"] == "client_rpc.timeout" && r["task"] == "shield.timeout callback" {
				return true
			}
		}
		return false
	})
	luatest.Expect(t, w.Ask(t, "a", 100, "{}"), `"pong"`, "")
	found := false
	for _, r := range w.Logs.Records("handler failed") {
		if r["task"] == "shield.timeout callback" {
			found = true
		}
	}
	if !found {
		t.Fatal("the raising callback was not logged")
	}
}

// TestSleepSuspendsOnlyItsTask checks that a sleeping handler lets the VM
// serve the next request: the quick one is answered while the sleeper
// sleeps (before its answer; no clock needed for that), and the sleeper
// sleeps its whole 300 ms (the lower bound is the point).
func TestSleepSuspendsOnlyItsTask(t *testing.T) {
	cases := []luaCase{
		{name: "sleeper", body: `shield.sleep(300) return "slept"`},
		{name: "quick", body: `return "quick"`},
	}
	a, aScript := caseActor("a", "", "", cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	start := time.Now()
	slow := w.Send(t, "a", 1, "{}")
	luatest.Expect(t, w.Ask(t, "a", 2, "{}"), `"quick"`, "")
	if len(w.Gateway.Responses(slow)) != 0 {
		t.Fatalf("the sleeper answered before the quick request, after %v: the sleep held the VM", time.Since(start))
	}
	luatest.Expect(t, w.Await(t, slow), `"slept"`, "")
	if took := time.Since(start); took < 290*time.Millisecond {
		t.Fatalf("the sleeper answered after %v", took)
	}
}
