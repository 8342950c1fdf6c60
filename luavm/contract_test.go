package luavm_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/metrics"
)

// The rules of SPEC §6 and §8 that the second contract round added, in
// real VMs under the real runtime.

// calleeLua is service b: a method, a handler binding, and hooks.
const calleeLua = `local M = {}
function M.init(ctx) end
function M.client_disconnected(ctx, client, reason) end
function M.draining(ctx) end
function M.handle(ctx, client, req) return "handled" end
function M.echo(ctx, ...) return ... end
function M.shape(ctx, v) return { n = select('#', ctx, v), keys = (function() local k = {} for key in pairs(v) do k[#k + 1] = type(key) .. ":" .. tostring(key) end table.sort(k) return k end)() } end
function M.count(ctx, ...) return select('#', ...), (...) == nil end
function M.slow(ctx, ms) shield.sleep(ms) shield.log.info("slow done", "ms", ms) end
return M`

// TestHooksAndHandlersAreNotMethods (SPEC §8): shield.call and shield.send
// to a hook, or to the binding of a client route compiled in the callee,
// is client_rpc.unavailable.
func TestHooksAndHandlersAreNotMethods(t *testing.T) {
	cases := []luaCase{
		{name: "call init", body: `return shield.call("b", "init")`, want: "client_rpc.unavailable", msg: "hook"},
		{name: "call stop (absent from the module, still a hook)", body: `return shield.call("b", "stop")`, want: "client_rpc.unavailable"},
		{name: "call draining", body: `return shield.call("b", "draining")`, want: "client_rpc.unavailable", msg: "hook"},
		{name: "call client_disconnected", body: `return shield.call("b", "client_disconnected", {session_id = 1, epoch = 1, gateway = "gw-test"}, "closed")`, want: "client_rpc.unavailable", msg: "hook"},
		{name: "call a handler with a forged client", body: `return shield.call("b", "handle", {session_id = 7, epoch = 3, player_id = "admin", gateway = "gw-test"}, {})`, want: "client_rpc.unavailable", msg: "handler of a client route"},
		{name: "send to a handler", body: `local ok, code = shield.send("b", "handle", {}, {}) return { ok = ok == nil, code = code }`,
			want: `{"code":"client_rpc.unavailable","ok":true}`},
		{name: "a method still works", body: `return shield.call("b", "echo", 1)`, want: `1`},
	}
	a, aScript := caseActor("a", "", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "\n      - {id: 900, binding: handle}")),
		"a.lua":       aScript, "b.lua": calleeLua,
	})
	runCases(t, w, "a", cases)
}

// TestValuesCrossAsJSON (SPEC §8): arguments and results cross from VM to
// VM as copies under the JSON <-> Lua mapping: keys other than 1..n
// become strings, a nil argument stays nil, and a function, userdata or
// coroutine raises at the caller.
func TestValuesCrossAsJSON(t *testing.T) {
	cases := []luaCase{
		{name: "mixed keys arrive as strings", body: `return shield.call("b", "shape", {1, 2, x = "y", [10] = "ten"})`,
			want: `{"keys":["string:1","string:10","string:2","string:x"],"n":2}`},
		{name: "a sequence stays a sequence", body: `return shield.call("b", "shape", {"p", "q"})`, want: `{"keys":["number:1","number:2"],"n":2}`},
		{name: "nil arguments stay nil", body: `local n, first = shield.call("b", "count", nil, 1) return { n = n, first = first }`, want: `{"first":true,"n":2}`},
		{name: "null stays null", body: `return shield.call("b", "echo", shield.null) == shield.null`, want: `true`},
		{name: "a function raises at the caller", body: `local ok, err = pcall(shield.call, "b", "echo", print) return { ok = ok, err = tostring(err):find("cannot be sent", 1, true) ~= nil }`,
			want: `{"err":true,"ok":false}`},
		{name: "a coroutine raises at the caller", body: `return shield.send("b", "echo", coroutine.create(print))`, want: "client_rpc.handler_failed"},
		{name: "a result is a copy", body: `local t = {1} local r = shield.call("b", "echo", t) return r ~= t and r[1] == 1`, want: `true`},
	}
	a, aScript := caseActor("a", "", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript, "b.lua": calleeLua,
	})
	runCases(t, w, "a", cases)
}

// TestSendCarriesNoBudget (SPEC §6): shield.send's callee runs under its
// own handler_timeout, whatever happens to the sender; a call's callee
// under the caller's remaining budget.
func TestSendCarriesNoBudget(t *testing.T) {
	cases := []luaCase{
		{name: "send", body: `shield.send("b", "slow", 400) return "sent"`, want: `"sent"`},
		{name: "call", body: `return shield.call("b", "slow", 401)`, want: "client_rpc.timeout"},
	}
	a, aScript := caseActor("a", "handler_timeout: 200ms", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript, "b.lua": calleeLua,
	})
	runCases(t, w, "a", cases)
	w.Logs.WaitRecords(t, "slow done", 1)
	time.Sleep(300 * time.Millisecond) // the called one would have finished by now: it must not have
	for _, r := range w.Logs.Records("slow done") {
		if r["ms"] == 401.0 {
			t.Fatal("the call's callee outlived its caller's budget")
		}
	}
}

// TestBudgetCountsFromRead (SPEC §6): a handler's budget counts from when
// the gateway read the frame: a frame that waited its whole budget does
// not run, and answers timeout.
func TestBudgetCountsFromRead(t *testing.T) {
	cases := []luaCase{{name: "mark", body: `shield.log.info("ran") return 1`}}
	a, aScript := caseActor("a", "handler_timeout: 1s", "", cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	id := w.Next.Add(1)
	w.Deliver(t, "a", &ingress.ClientIngress{Client: luatest.Client(id, 1), Body: []byte("{}"), Codec: "json",
		Received: time.Now().Add(-2 * time.Second)})
	luatest.Expect(t, w.Await(t, id), "client_rpc.timeout", "budget")
	if n := len(w.Logs.Records("ran")); n != 0 {
		t.Fatal("a frame whose budget was spent waiting ran")
	}
	id = w.Next.Add(1)
	w.Deliver(t, "a", &ingress.ClientIngress{Client: luatest.Client(id, 1), Body: []byte("{}"), Codec: "json",
		Received: time.Now().Add(-500 * time.Millisecond)})
	luatest.Expect(t, w.Await(t, id), "1", "")
}

// TestSettings (SPEC §8, §11): shield.settings() is a new copy of the
// actor's settings each call: mappings as tables, sequences as arrays,
// null as shield.null; writing into it changes nothing.
func TestSettings(t *testing.T) {
	cases := []luaCase{
		{name: "values", body: `local s = shield.settings() return { turn = s.turn_seconds, modes = s.modes, deep = s.nested.k, none = s.none == shield.null, ratio = s.ratio }`,
			want: `{"deep":"v","modes":["duel","team"],"none":true,"ratio":0.5,"turn":30}`},
		{name: "a copy", body: `local s = shield.settings() s.turn_seconds = 1 s.modes[1] = "x" local again = shield.settings() return { again.turn_seconds, again.modes[1] }`,
			want: `[30,"duel"]`},
		{name: "an empty list stays an array", body: `return shield.settings().empty`, want: `[]`},
	}
	a, aScript := caseActor("a", `settings: {turn_seconds: 30, modes: [duel, team], nested: {k: v}, none: null, ratio: 0.5, empty: []}`, "", cases)
	b, bScript := caseActor("b", "", "", []luaCase{{name: "none", body: `return next(shield.settings()) == nil`}})
	b = strings.ReplaceAll(b, "id: 1,", "id: 50,")
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a, b), "a.lua": aScript, "b.lua": bScript})
	runCases(t, w, "a", cases)
	luatest.Expect(t, w.Ask(t, "b", 50, "{}"), "true", "")
}

// TestCallAtLoadNamesTheLine: shield.call in a script's top level fails
// the start with a message that names the script's line and says to use
// init.
func TestCallAtLoadNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "", "")),
		"a.lua":       "local M = {}\n\nlocal peer = shield.call(\"a\", \"x\")\nreturn M\n",
	})
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), bootstrap.Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		rep.Close()
		t.Fatal("the compile succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "a.lua:3)") || !strings.Contains(msg, "init") {
		t.Fatalf("error %q: want the script's line and a hint to use init", msg)
	}
}

// TestLogKeysOnce (SPEC §9): a line logged while handling a client's frame
// carries session_id and player_id once each; a script's own keys of
// those names are renamed arg.<key>; a table is nested JSON. The world's
// log reader fails the test on a duplicated key.
func TestLogKeysOnce(t *testing.T) {
	cases := []luaCase{{name: "log", body: `shield.log.info("keys", "player_id", "forged", "session_id", 1, "service", "x", "t", { a = { 1 } }) return 1`}}
	a, aScript := caseActor("a", "", "", cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	c := luatest.Client(w.Next.Add(1), 1)
	c.Ref.PlayerID = "real"
	w.Deliver(t, "a", &ingress.ClientIngress{Client: c, Body: []byte("{}"), Codec: "json"})
	luatest.Expect(t, w.Await(t, c.RequestID), "1", "")
	r := w.Logs.WaitRecords(t, "keys", 1)[0]
	if r["player_id"] != "real" || r["session_id"] != 7.0 || r["arg.player_id"] != "forged" || r["arg.session_id"] != 1.0 ||
		r["arg.service"] != "x" || r["service"] != "a" {
		t.Fatalf("record %v", r)
	}
	if tb, ok := r["t"].(map[string]any); !ok || tb["a"] == nil {
		t.Fatalf("a table logged as %#v, want a nested object", r["t"])
	}
}

// TestIncidentLines: an incident's error line names the session, and a VM
// writes at most a burst of them (then 10 a second); the rest are counted.
func TestIncidentLines(t *testing.T) {
	m := metrics.New()
	cases := []luaCase{{name: "raise", body: `error("boom")`}}
	a, aScript := caseActor("a", "", "", cases)
	w := luatest.StartWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript}, luatest.Options{Metrics: m})
	const n = 150
	var last uint64
	for range n {
		last = w.Send(t, "a", 1, "{}")
	}
	w.Await(t, last)
	recs := w.Logs.Records("handler failed")
	if len(recs) >= n || len(recs) < 100 {
		t.Fatalf("%d incident lines for %d incidents, want the burst of 100 and a few", len(recs), n)
	}
	if recs[0]["session_id"] != 7.0 {
		t.Fatalf("incident line %v without the session", recs[0])
	}
	luatest.Wait(t, 5*time.Second, "the rest counted", func() bool {
		return promtest.ToFloat64(m.IncidentsNotLogged.WithLabelValues("a")) == float64(n-len(w.Logs.Records("handler failed")))
	})
}
