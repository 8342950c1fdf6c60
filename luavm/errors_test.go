package luavm_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

// TestErrors checks what a raising handler answers (SPEC §6): a Lua error
// is handler_failed with an incident id, shield.error's business codes
// pass through, and nothing else can pose as a Shield code.
func TestErrors(t *testing.T) {
	const fail = "client_rpc.handler_failed"
	incident := luatest.IncidentMsg.String()
	cases := []luaCase{
		{name: "error with a string", body: `error("boom")`, want: fail, msg: incident},
		{name: "error with a table", body: `error({ reason = "boom" })`, want: fail, msg: incident},
		{name: "error with nil", body: `error(nil)`, want: fail, msg: incident},
		{name: "runtime error", body: `local t = nil; return t.x`, want: fail, msg: incident},
		{name: "arithmetic on a string", body: `return {} + 1`, want: fail, msg: incident},
		{name: "error in a nested function", body: `local function inner() error("deep") end
		                                             local function outer() inner() end
		                                             outer()`, want: fail, msg: incident},
		{name: "error after pcall caught one", body: `pcall(error, "first") error("second")`, want: fail, msg: incident},
		{name: "bad argument to a shield function", body: `shield.sleep("soon")`, want: fail, msg: incident},
		{name: "shield.error with a business code", body: `shield.error("shop.sold_out", "none left")`, want: "shop.sold_out", msg: `^none left$`},
		{name: "shield.error with three segments", body: `shield.error("game.room_1.full", "m")`, want: "game.room_1.full", msg: `^m$`},
		{name: "shield.error without a message", body: `shield.error("shop.closed")`, want: "shop.closed", msg: `^$`},
		{name: "shield.error inside pcall is a table", body: `local ok, e = pcall(shield.error, "shop.x", "m")
		                                                     return { ok = ok, code = e.code, message = e.message, s = tostring(e), mt = getmetatable(e) }`,
			want: `{"code":"shop.x","message":"m","mt":false,"ok":false,"s":"shop.x: m"}`},
		{name: "a caught shield error raised again keeps its code", body: `local ok, e = pcall(shield.error, "shop.x", "m") error(e)`, want: "shop.x", msg: `^m$`},
		{name: "a caught shield.call error raised again keeps its code", body: `local ok, e = pcall(shield.call, "nosuch", "m") error(e)`, want: "client_rpc.unavailable"},
		{name: "shield.error client_rpc.x", body: `shield.error("client_rpc.timeout", "m")`, want: fail, msg: incident},
		{name: "shield.error session.x", body: `shield.error("session.kicked", "m")`, want: fail, msg: incident},
		{name: "shield.error gateway.x", body: `shield.error("gateway.draining", "m")`, want: fail, msg: incident},
		{name: "shield.error Bad.Code", body: `shield.error("Bad.Code", "m")`, want: fail, msg: incident},
		{name: "shield.error nodot", body: `shield.error("nodot", "m")`, want: fail, msg: incident},
		{name: "shield.error trailing dot", body: `shield.error("shop.", "m")`, want: fail, msg: incident},
		{name: "shield.error leading digit", body: `shield.error("1shop.x", "m")`, want: fail, msg: incident},
		{name: "shield.error with a dash", body: `shield.error("shop.sold-out", "m")`, want: fail, msg: incident},
		{name: "shield.error with no code", body: `shield.error()`, want: fail, msg: incident},
		{name: "a forged error table is not trusted", body: `error({ code = "client_rpc.timeout", message = "forged" })`, want: fail, msg: incident},
		{name: "a forged business code is not trusted", body: `error({ code = "shop.sold_out", message = "forged" })`, want: fail, msg: incident},
		{name: "a forged table with __tostring", body: `error(setmetatable({ code = "client_rpc.busy" }, { __tostring = function() return "client_rpc.busy" end }))`, want: fail, msg: incident},
		{name: "the error metatable cannot be borrowed", body: `local ok, e = pcall(shield.error, "shop.x")
		                                                       error(setmetatable({ code = "client_rpc.timeout" }, getmetatable(e) or nil))`, want: fail, msg: incident},
		{name: "a response that does not encode", body: `return { f = function() end }`, want: fail, msg: incident},
		{name: "deep recursion", body: `local function f(n) return 1 + f(n + 1) end return f(1)`, want: fail, msg: incident},
		{name: "deep recursion through pcall", body: `local function f() local ok, e = pcall(f) if not ok then error(e, 0) end end f()`, want: fail, msg: incident},
		{name: "deep recursion through coroutines", body: `local function f() coroutine.wrap(f)() end f()`, want: fail, msg: incident},
		{name: "deep recursion through metamethods", body: `local t = setmetatable({}, { __index = function(t, k) return t[k] end }) return t.x`, want: fail, msg: incident},
		{name: "still serving", body: `return "ok"`, want: `"ok"`},
	}
	a, aScript := caseActor("a", "handler_timeout: 5s", "", cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	runCases(t, w, "a", cases)

	// Every handler_failed has one log line with the same incident, the
	// error and a traceback; the message sent never has the traceback.
	failed := w.Logs.Records("handler failed")
	byIncident := map[string]map[string]any{}
	for _, r := range failed {
		byIncident[r["incident"].(string)] = r
	}
	w.Gateway.Mu.Lock()
	resp := append(w.Gateway.Resp[:0:0], w.Gateway.Resp...)
	w.Gateway.Mu.Unlock()
	n := 0
	for _, r := range resp {
		if r.Err == nil || r.Err.Code != fail {
			continue
		}
		n++
		m := luatest.IncidentMsg.FindStringSubmatch(r.Err.Message)
		if m == nil {
			t.Fatalf("message %q", r.Err.Message)
		}
		rec, ok := byIncident[m[1]]
		if !ok {
			t.Fatalf("no log line with incident %s", m[1])
		}
		if rec["level"] != "ERROR" || rec["service"] != "a" || rec["instance"] != 0.0 {
			t.Fatalf("log line %v", rec)
		}
		if strings.Contains(r.Err.Message, "traceback") || strings.Contains(r.Err.Message, ".lua") {
			t.Fatalf("message %q leaks internals", r.Err.Message)
		}
	}
	if n < 25 {
		t.Fatalf("%d handler_failed responses", n)
	}
	// The traceback points into the script.
	for _, r := range failed {
		if strings.Contains(r["error"].(string), "deep") {
			// In Lua's words: the Go function error, the two named
			// functions, and the handler, which Go calls, by where it is
			// defined.
			tb := r["traceback"].(string)
			if !tracebackShape.MatchString(tb) {
				t.Fatalf("traceback %q", tb)
			}
			return
		}
	}
	t.Fatal("no log line for the nested error")
}

var tracebackShape = regexp.MustCompile(`^stack traceback:
\t\[C\]: in function 'error'
\t\S*/a\.lua:(\d+): in function 'inner'
\t\S*/a\.lua:(\d+): in function 'outer'
\t\S*/a\.lua:(\d+): in function <\S*/a\.lua:\d+>$`)

// TestErrorValueHasNoTraceback checks that the error a script catches is
// the message alone, as in Lua.
func TestErrorValueHasNoTraceback(t *testing.T) {
	cases := []luaCase{
		{name: "pcall", body: `local ok, e = pcall(function() error("boom") end) return e`, want: ""},
		{name: "pcall of a runtime error", body: `local ok, e = pcall(function() local x = nil; return x.y end) return e`, want: ""},
		{name: "xpcall", body: `local ok, e = xpcall(function() error("boom") end, function(e) return e end) return e`, want: ""},
		{name: "coroutine.resume", body: `local ok, e = coroutine.resume(coroutine.create(function() error("boom") end)) return e`, want: ""},
	}
	a, aScript := caseActor("a", "", "", cases)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.Ask(t, "a", uint32(i+1), "{}")
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			body := string(r.Body)
			if !strings.Contains(body, "a.lua:") || strings.Contains(body, "traceback") || strings.Contains(body, `\n`) {
				t.Fatalf("error value %s", body)
			}
		})
	}
}
