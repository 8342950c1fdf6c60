package luavm_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/service"
)

// callee is service b: the methods shield.call and shield.send reach.
const callee = `local M = {}
local stored
function M.echo(ctx, ...) return ... end
function M.multi(ctx) return 1, nil, "x", { k = 1 } end
function M.null(ctx) return shield.null end
function M.empty(ctx) return shield.array({}) end
function M.biz(ctx) shield.error("shop.sold_out", "none left") end
function M.boom(ctx) error("kaboom") end
function M.forged(ctx) error({ code = "client_rpc.timeout", message = "forged" }) end
function M.set(ctx, v) stored = v end
function M.get(ctx) return stored end
function M.fn(ctx) return function() end end
function M.slow(ctx, ms) shield.sleep(ms) return "slow" end
return M`

// shard is a service with three instances that reports which one ran.
const shard = `local M = {}
function M.who(ctx, key)
  local name, inst = shield.self()
  return name, inst, ctx.instance
end
return M`

// narrow has a one-message business lane; spin keeps its only goroutine
// busy until its budget runs out.
const narrow = `local M = {}
function M.spin(ctx) while true do end end
function M.noop(ctx) return true end
return M`

// fillNarrow starts narrow spinning, then fills its lane.
const fillNarrow = `
local function fill_narrow()
  -- a previous case may have left narrow spinning with a full lane
  while not shield.send("narrow", "spin") do shield.sleep(10) end
  shield.sleep(30) -- narrow takes the spin off its lane and runs it
  for i = 1, 5 do shield.send("narrow", "noop") end
end
local function pack(...) return { n = select("#", ...), ... } end
`

func TestCall(t *testing.T) {
	cases := []luaCase{
		{name: "several values with nil in the middle",
			body: `local p = pack(shield.call("b", "multi"))
			       return { n = p.n, a = p[1], b = p[2] == nil, c = p[3], d = p[4].k }`,
			want: `{"a":1,"b":true,"c":"x","d":1,"n":4}`},
		{name: "no values", body: `return { n = select("#", shield.call("b", "echo")) }`, want: `{"n":0}`},
		{name: "tables round trip",
			body: `return shield.call("b", "echo", req)`,
			req:  `{"list":[1,2.5,"x",true],"obj":{"a":{"b":[]}},"big":9007199254740993}`,
			want: `{"big":"9007199254740993","list":[1,2.5,"x",true],"obj":{"a":{"b":[]}}}`},
		{name: "arguments keep their count and holes",
			body: `local p = pack(shield.call("b", "echo", 1, nil, 3, nil))
			       return { n = p.n, a = p[1], b = p[2] == nil, c = p[3] }`,
			want: `{"a":1,"b":true,"c":3,"n":4}`},
		{name: "shield.null crosses", body: `return { null = shield.call("b", "null") == shield.null }`, want: `{"null":true}`},
		{name: "shield.array({}) crosses", body: `return { j = shield.json.encode(shield.call("b", "empty")) }`, want: `{"j":"[]"}`},
		{name: "null inside a table crosses", body: `return shield.call("b", "echo", req)`, req: `{"a":[null,1],"b":null}`, want: `{"a":[null,1],"b":null}`},
		{name: "unknown service", body: `return shield.call("nosuch", "echo")`, want: "client_rpc.unavailable", msg: `nosuch`},
		{name: "plain name for a sharded service", body: `return shield.call("shard", "who")`, want: "client_rpc.unavailable", msg: `instances`},
		{name: "no such method", body: `return shield.call("b", "nosuch")`, want: "client_rpc.unavailable", msg: `nosuch`},
		{name: "business error arrives unchanged", body: `return shield.call("b", "biz")`, want: "shop.sold_out", msg: `^none left$`},
		{name: "callee raising is handler_failed", body: `return shield.call("b", "boom")`, want: "client_rpc.handler_failed", msg: luatest.IncidentMsg.String()},
		{name: "callee forging a code is handler_failed", body: `return shield.call("b", "forged")`, want: "client_rpc.handler_failed", msg: luatest.IncidentMsg.String()},
		{name: "callee returning a function is handler_failed", body: `return shield.call("b", "fn")`, want: "client_rpc.handler_failed"},
		{name: "a function argument cannot leave the VM", body: `return shield.call("b", "echo", function() end)`, want: "client_rpc.handler_failed"},
		{name: "a bad address", body: `return shield.call(42, "echo")`, want: "client_rpc.handler_failed"},
		{name: "an address table without service", body: `return shield.call({ key = "x" }, "echo")`, want: "client_rpc.handler_failed"},
		{name: "callee's business lane full", body: `fill_narrow() return shield.call("narrow", "noop")`, want: "client_rpc.busy"},
		{name: "pcall catches the error table",
			body: `local ok, e = pcall(shield.call, "nosuch", "echo")
			       return { ok = ok, type = type(e), code = e.code, msg = e.message ~= "", str = tostring(e) == e.code .. ": " .. e.message }`,
			want: `{"code":"client_rpc.unavailable","msg":true,"ok":false,"str":true,"type":"table"}`},
		{name: "pcall catches a business error",
			body: `local ok, e = pcall(shield.call, "b", "biz")
			       return { ok = ok, code = e.code, message = e.message, str = tostring(e) }`,
			want: `{"code":"shop.sold_out","message":"none left","ok":false,"str":"shop.sold_out: none left"}`},
		{name: "pcall around a call that succeeds", body: `local p = pack(pcall(shield.call, "b", "echo", 7, 8)) return { n = p.n, p[1], p[2], p[3] }`, want: `{"1":true,"2":7,"3":8,"n":3}`},
		{name: "coroutine.resume passes a call through and keeps its own yields",
			body: `local co = coroutine.create(function(x)
			         local y = coroutine.yield(x + 1)
			         return shield.call("b", "echo", y * 2)
			       end)
			       local ok1, a = coroutine.resume(co, 1)
			       local ok2, b = coroutine.resume(co, 10)
			       return { a = a, b = b, ok = ok1 and ok2, st = coroutine.status(co) }`,
			want: `{"a":2,"b":20,"ok":true,"st":"dead"}`},
		{name: "nested pcalls around calls",
			body: `local ok, a, b = pcall(function()
			         local ok2, x = pcall(shield.call, "b", "echo", 1)
			         return x + shield.call("b", "echo", 2), ok2
			       end)
			       return { ok = ok, a = a, b = b }`,
			want: `{"a":3,"b":true,"ok":true}`},
		{name: "xpcall around a call that succeeds",
			body: `local ok, v = xpcall(function() return shield.call("b", "echo", 5) end, function(e) return "h" end)
			       return { ok = ok, v = v }`,
			want: `{"ok":true,"v":5}`},
		{name: "xpcall hands the error table to its handler",
			body: `local ok, v = xpcall(function() return shield.call("b", "biz") end, function(e) return "handled " .. e.code end)
			       return { ok = ok, v = v }`,
			want: `{"ok":false,"v":"handled shop.sold_out"}`},
		{name: "coroutine.wrap around a call",
			body: `local f = coroutine.wrap(function(x) return shield.call("b", "echo", x) end)
			       return { v = f(9) }`,
			want: `{"v":9}`},
		{name: "send returns true and never waits",
			body: `local t0 = shield.now()
			       local ok, code = shield.send("b", "set", 42)
			       local v = shield.call("b", "get")
			       return { ok = ok, code = code, v = v }`,
			want: `{"ok":true,"v":42}`},
		{name: "send to an unknown service",
			body: `local ok, code = shield.send("nosuch", "set", 1) return { ok = ok == nil, code = code }`,
			want: `{"code":"client_rpc.unavailable","ok":true}`},
		{name: "send with a plain name for a sharded service",
			body: `local ok, code = shield.send("shard", "who") return { ok = ok == nil, code = code }`,
			want: `{"code":"client_rpc.unavailable","ok":true}`},
		{name: "send to a full lane does not wait",
			body: `fill_narrow()
			       local t0 = shield.now()
			       local ok, code = shield.send("narrow", "noop")
			       return { ok = ok == nil, code = code, quick = shield.now() - t0 < 50 }`,
			want: `{"code":"client_rpc.busy","ok":true,"quick":true}`},
		{name: "send to a missing method is accepted", body: `return { ok = shield.send("b", "nosuch") }`, want: `{"ok":true}`},
	}
	a, aScript := caseActor("a", "handler_timeout: 2s\nmailbox: 64", fillNarrow, cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			a,
			luatest.ActorYAML("b", "", ""),
			luatest.ActorYAML("shard", "instances: 3", ""),
			luatest.ActorYAML("narrow", "mailbox: 1\nhandler_timeout: 300ms", "")),
		"a.lua": aScript, "b.lua": callee, "shard.lua": shard, "narrow.lua": narrow,
	})
	runCases(t, w, "a", cases)
}

// TestCallShardKey checks that {service=, key=} reaches fnv1a64(key) % n.
func TestCallShardKey(t *testing.T) {
	cases := []luaCase{{name: "who", body: `local name, inst, ctxinst = shield.call({ service = "shard", key = req.key }, "who")
	                                      return { name = name, inst = inst, ctx = ctxinst }`}}
	a, aScript := caseActor("a", "", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("shard", "instances: 3", "")),
		"a.lua":       aScript, "shard.lua": shard,
	})
	seen := map[int]bool{}
	for i := 0; i < 30; i++ {
		key := "player-" + strconv.Itoa(i)
		want := service.Shard(key, 3)
		seen[want] = true
		r := w.Ask(t, "a", 1, fmt.Sprintf(`{"key":%q}`, key))
		luatest.Expect(t, r, fmt.Sprintf(`{"ctx":%d,"inst":%d,"name":"shard"}`, want, want), "")
	}
	if len(seen) != 3 {
		t.Fatalf("30 keys reached only instances %v", seen)
	}
	// A numeric key shards as its decimal string.
	r := w.Ask(t, "a", 1, `{"key":12345}`)
	want := service.Shard("12345", 3)
	luatest.Expect(t, r, fmt.Sprintf(`{"ctx":%d,"inst":%d,"name":"shard"}`, want, want), "")
}

// TestMaxPending checks that past max_pending, call, sleep and timeout
// raise client_rpc.busy, and that cancelling frees the slots.
func TestMaxPending(t *testing.T) {
	cases := []luaCase{
		{name: "full", body: `
			local f = function() end
			local t1 = shield.timeout(60000, f)
			local t2 = shield.timeout(60000, f)
			local out = {}
			local ok, e = pcall(shield.call, "b", "echo", 1); out.call = e.code
			ok, e = pcall(shield.sleep, 1); out.sleep = e.code
			ok, e = pcall(shield.timeout, 1, f); out.timeout = e.code
			out.cancel = shield.cancel(t1) and shield.cancel(t2)
			out.after = shield.call("b", "echo", "ok")
			return out`,
			want: `{"after":"ok","call":"client_rpc.busy","cancel":true,"sleep":"client_rpc.busy","timeout":"client_rpc.busy"}`},
		{name: "slow", body: `return shield.call("b", "slow", 200)`, want: `"slow"`},
	}
	a, aScript := caseActor("a", "max_pending: 2", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript, "b.lua": callee,
	})
	runCases(t, w, "a", cases)

	// Calls in flight from other tasks count too: two requests wait on a
	// slow callee, the third one's call is refused at once.
	var ids []uint64
	for i := 0; i < 3; i++ {
		ids = append(ids, w.Send(t, "a", 2, `{}`))
	}
	luatest.Expect(t, w.Await(t, ids[2]), "client_rpc.busy", "max_pending")
	luatest.Expect(t, w.Await(t, ids[0]), `"slow"`, "")
	luatest.Expect(t, w.Await(t, ids[1]), `"slow"`, "")
}
