package luavm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/luavm"
)

// TestResumeOfAWaitingThread checks that a coroutine cannot resume a thread
// that is waiting for it (Lua's "normal" status): gopher-lua allows it and
// then panics in Go, which cost the VM and left the request unanswered.
func TestResumeOfAWaitingThread(t *testing.T) {
	cases := []luaCase{
		{name: "the message coroutine from inside pcall", body: `local me = coroutine.running()
			local ok, rok, msg = pcall(function() return coroutine.resume(me, 1) end)
			return { ok, rok, msg }`, want: `[true,false,"cannot resume non-suspended coroutine"]`},
		{name: "a grandparent from a nested coroutine", body: `local outer
			outer = coroutine.create(function()
				local inner = coroutine.create(function() return coroutine.status(outer), coroutine.resume(outer) end)
				return coroutine.resume(inner)
			end)
			return { coroutine.resume(outer) }`, want: `[true,true,"normal",false,"cannot resume non-suspended coroutine"]`},
		{name: "through coroutine.wrap", body: `local me = coroutine.running()
			local ok, e = pcall(coroutine.wrap(function() return coroutine.resume(me) end))
			return { ok, e }`, want: `[true,false]`},
		{name: "a suspended coroutine still resumes", body: `local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
			local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co, 5)
			return { x, y, coroutine.status(co) }`, want: `[2,10,"dead"]`},
	}
	awaitCases(t, startCases(t, "", "", cases), cases)
}

// TestLoadLoopInsideCoroutine checks that the load budget stops an endless
// loop at a script's top level even inside pcall or a coroutine, whose
// threads did not see the load's own context: the start hung for ever.
func TestLoadLoopInsideCoroutine(t *testing.T) {
	for name, src := range map[string]string{
		"pcall":             `pcall(function() while true do end end) return {}`,
		"xpcall":            `xpcall(function() while true do end end, print) return {}`,
		"coroutine.wrap":    `coroutine.wrap(function() while true do end end)() return {}`,
		"a required module": `require("spin") return {}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "a.lua")
			if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "spin.lua"), []byte(`pcall(function() while true do end end)`), 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				vm, err := luavm.New(luavm.Spec{Service: "a", Script: script, LoadTimeout: 100 * time.Millisecond})
				if vm != nil {
					vm.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "did not finish loading within 100ms") {
					t.Fatalf("err = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the load never ended")
			}
		})
	}
}

// TestTailCalledYield checks a coroutine whose function ends in `return
// coroutine.yield(...)`, a tail call of a Go function from the coroutine's
// first frame: gopher-lua left the suspended coroutine with no frame, and
// the next coroutine.resume dereferenced the missing one in Go, which cost
// the VM (third_party/gopher-lua PATCHES.md, patch 8).
func TestTailCalledYield(t *testing.T) {
	cases := []luaCase{
		{name: "resumed after the yield", body: `local co = coroutine.create(function(a) return coroutine.yield(a + 1) end)
			local _, x = coroutine.resume(co, 1) local st = coroutine.status(co)
			local ok, y = coroutine.resume(co, 5)
			return { x, st, ok, y, coroutine.status(co) }`, want: `[2,"suspended",true,5,"dead"]`},
		{name: "a generator through wrap", body: `local gen = coroutine.wrap(function(n)
				for i = 1, 2 do n = coroutine.yield(n * 10) end
				return coroutine.yield(n + 1)
			end)
			return { gen(1), gen(2), gen(3), gen(4) }`, want: `[10,20,4,4]`},
		{name: "several values", body: `local co = coroutine.create(function() return coroutine.yield(1, 2, 3) end)
			local r1 = { coroutine.resume(co) } local r2 = { coroutine.resume(co, "a", "b") }
			return { r1, r2, coroutine.status(co) }`, want: `[[true,1,2,3],[true,"a","b"],"dead"]`},
		{name: "a dead one still refuses", body: `local co = coroutine.create(function() return coroutine.yield() end)
			coroutine.resume(co) coroutine.resume(co)
			return { coroutine.resume(co) }`, want: `[false,"can not resume a dead thread"]`},
	}
	awaitCases(t, startCases(t, "", "", cases), cases)
}

// TestGoFunctionTasks checks tasks whose function is a Go function (a
// module field set to one, a timer's callback): they run through a Lua
// trampoline, since gopher-lua never ends a coroutine whose first frame is
// a Go function, and that cost the VM.
func TestGoFunctionTasks(t *testing.T) {
	cases := []luaCase{
		{name: "a timer's callback is a Go function", body: `shield.timeout(1, type) shield.sleep(30) return "slept"`, want: `"slept"`},
		{name: "a method is a Go function", body: `return shield.call("a", "gomethod")`, want: `"table"`},
	}
	w := startCases(t, "M.gotype = type\nM.gomethod = type", "      - {id: 101, binding: gotype}\n", cases)
	t.Run("a handler is a Go function", func(t *testing.T) {
		luatest.Expect(t, w.Ask(t, "a", 101, "{}"), `"table"`, "")
	})
	awaitCases(t, w, cases)
}

// TestHijackedMessageCoroutine checks that a message's coroutine, kept by
// a script (coroutine.running()) while the message waits, cannot be
// resumed by anything but the VM: a timer's callback or another message
// is refused and the message goes on with its own reply, and once the
// message has ended waiting (its budget ran out) the coroutine is dead,
// so the rest of the handler never runs inside another message.
func TestHijackedMessageCoroutine(t *testing.T) {
	cases := []luaCase{
		{name: "a timer's callback is refused", body: `local me = coroutine.running()
			local got
			shield.timeout(1, function() got = { coroutine.resume(me, "hijacked") } end)
			shield.sleep(50)
			return got`, want: `[false,"cannot resume a message's coroutine"]`},
	}
	// keep waits in its handler's coroutine (a bare yield), in a pcall's
	// or in a coroutine of its own (each around a sleep past its budget);
	// poke resumes the one it kept.
	prelude := `function M.ping() return "pong" end
function M.keep() M.kept = coroutine.running() return coroutine.yield() end
function M.keeppcall() return pcall(function() M.kept = coroutine.running() shield.sleep(5000) end) end
function M.keepwrap() return coroutine.wrap(function() M.kept = coroutine.running() shield.sleep(5000) end)() end
function M.poke() return { coroutine.resume(M.kept, "hijacked") } end`
	a, aScript := caseActor("a", "handler_timeout: 500ms", prelude, cases)
	a += "      - {id: 100, binding: ping}\n      - {id: 101, binding: keep}\n      - {id: 102, binding: poke}\n" +
		"      - {id: 103, binding: keeppcall}\n      - {id: 104, binding: keepwrap}\n"
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	awaitCases(t, w, cases)
	for _, tc := range []struct {
		name  string
		route uint32
	}{{"the handler's coroutine", 101}, {"a pcall's", 103}, {"a coroutine of its own", 104}} {
		t.Run(tc.name+": another message is refused, and after the budget it is dead", func(t *testing.T) {
			kept := w.Send(t, "a", tc.route, "{}")
			luatest.Expect(t, w.Ask(t, "a", 102, "{}"), `[false,"cannot resume a message's coroutine"]`, "")
			luatest.Expect(t, w.AwaitFor(t, kept, 3*time.Second), "client_rpc.timeout", "")
			luatest.Expect(t, w.Ask(t, "a", 102, "{}"), `[false,"can not resume a dead thread"]`, "")
		})
	}
}

// TestYieldAcrossGoCall checks a suspending shield function called where
// the yield would return into a Go function still running (a table.sort
// comparator, a gsub callback, an __index metamethod): an error, as in
// Lua 5.1 (gopher-lua patch 11), not a VM that hangs or crashes; a pcall
// catches it, and the op registered before the yield never resumes the
// message later.
func TestYieldAcrossGoCall(t *testing.T) {
	const across = "attempt to yield across metamethod/C-call boundary"
	cases := []luaCase{
		// A handler's error reaches the client as an incident (SPEC §6);
		// the log has the message, checked below.
		{name: "a sort comparator", body: `table.sort({3, 1, 2}, function(a, b) shield.sleep(1) return a < b end)`,
			want: "client_rpc.handler_failed", msg: "internal error"},
		{name: "a gsub callback", body: `return (string.gsub("ab", ".", function(c) shield.sleep(1) return c end))`,
			want: "client_rpc.handler_failed", msg: "internal error"},
		{name: "an __index metamethod", body: `local t = setmetatable({}, {__index = function() return shield.call("a", "pong") end})
			return t.x`, want: "client_rpc.handler_failed", msg: "internal error"},
		{name: "a for iterator", body: `for v in coroutine.wrap(function() shield.sleep(1) coroutine.yield(1) end) do end`,
			want: "client_rpc.handler_failed", msg: "internal error"},
		{name: "an xpcall whose handler fails leaves the message free to suspend", body: `xpcall(error, function() error("b") end)
			shield.sleep(1)
			return "slept"`, want: `"slept"`},
		{name: "caught by a pcall, nothing sent, and the sleep after it is the sleep's", body: `local ok, err = pcall(table.sort, {3, 1, 2}, function(a, b) shield.call("a", "bump") return a < b end)
			local n = select("#", shield.sleep(50))
			return { ok, (string.find(err, "` + across + `", 1, true)) ~= nil, n, M.bumps }`,
			want: `[false,true,0,0]`},
	}
	w := startCases(t, `function M.pong() return "pong" end
M.bumps = 0
function M.bump() M.bumps = M.bumps + 1 end`, "", cases)
	awaitCases(t, w, cases)
	n := 0
	for _, r := range w.Logs.Records("handler failed") {
		if e, _ := r["error"].(string); strings.Contains(e, across) {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("%d handler failures logged with %q, want 4", n, across)
	}
}

// startCases starts a world with service a: the cases as its routes 1..n,
// ping on route 100, the Lua prelude and the YAML routes given.
func startCases(t *testing.T, prelude, routes string, cases []luaCase) *luatest.World {
	t.Helper()
	a, aScript := caseActor("a", "handler_timeout: 2s", "function M.ping() return \"pong\" end\n"+prelude, cases)
	a += "      - {id: 100, binding: ping}\n" + routes
	return startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
}

// awaitCases sends each case's message and waits for its answer, checks
// that the VM still answers ping after it, and at the end that the VM
// never crashed (a Go panic inside a handler replaces it).
func awaitCases(t *testing.T, w *luatest.World, cases []luaCase) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			luatest.Expect(t, w.AwaitFor(t, w.Send(t, "a", uint32(i+1), "{}"), 3*time.Second), c.want, c.msg)
			luatest.Expect(t, w.Ask(t, "a", 100, "{}"), `"pong"`, "")
		})
	}
	if n := len(w.Logs.Records("go panic inside a handler; the VM will be replaced")); n != 0 {
		t.Fatalf("%d VM crashes", n)
	}
}
