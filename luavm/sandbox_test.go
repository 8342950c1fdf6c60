package luavm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestSandbox checks SPEC §8's sandbox: every way out raises inside the
// handler (client_rpc.handler_failed), and what is allowed works.
func TestSandbox(t *testing.T) {
	const fail = "client_rpc.handler_failed"
	cases := []luaCase{
		{name: "io", body: `io.write("x")`, want: fail},
		{name: "io.open", body: `return io.open("/etc/passwd")`, want: fail},
		{name: "os.execute", body: `os.execute("touch /tmp/shield-escaped")`, want: fail},
		{name: "os.exit", body: `os.exit(3)`, want: fail},
		{name: "os.getenv", body: `return os.getenv("HOME")`, want: fail},
		{name: "os.remove", body: `os.remove("/tmp/x")`, want: fail},
		{name: "os.rename", body: `os.rename("/tmp/x", "/tmp/y")`, want: fail},
		{name: "os.tmpname", body: `return os.tmpname()`, want: fail},
		{name: "os.setlocale", body: `return os.setlocale("C")`, want: fail},
		{name: "debug", body: `return debug.traceback()`, want: fail},
		{name: "debug via require", body: `return require("debug").getinfo(1)`, want: fail},
		{name: "io via require", body: `return require("io").open("/etc/passwd")`, want: fail},
		{name: "loadfile", body: `return loadfile("/etc/passwd")`, want: fail},
		{name: "dofile", body: `return dofile("/etc/passwd")`, want: fail},
		{name: "loadstring with a binary chunk", body: `return assert(loadstring("\27Lua\81\0\1\4\8\4\8\0"))()`, want: fail},
		{name: "load with a binary chunk", body: `local s = "\27Lua\81\0"
		                                           return assert(load(function() local r = s; s = nil; return r end))()`, want: fail},
		{name: "string.dump", body: `return string.dump(function() end)`, want: fail},
		{name: "string.dump through the metatable", body: `return ("").dump(function() end)`, want: fail},
		{name: "require ../x", body: `return require("../secret")`, want: fail},
		{name: "require an absolute path", body: `return require("/etc/passwd")`, want: fail},
		{name: "require with a slash", body: `return require("sub/../../secret")`, want: fail},
		{name: "require through a symlinked file", body: `return require("link")`, want: fail},
		{name: "require through a symlinked folder", body: `return require("linkdir.secret")`, want: fail},
		{name: "require a missing module", body: `return require("nosuch")`, want: fail},
		{name: "package.loadlib", body: `return package.loadlib("libc.so.6", "system")`, want: fail},
		{name: "module", body: `module("x")`, want: fail},
		{name: "_printregs", body: `_printregs()`, want: fail},
		{name: "the registry is out of reach", body: `return getfenv(0).io.open("/etc/passwd")`, want: fail},

		{name: "os.time", body: `return { ok = type(os.time()) == "number" and os.time() > 1.7e9 }`, want: `{"ok":true}`},
		{name: "os.clock", body: `return { ok = type(os.clock()) == "number" }`, want: `{"ok":true}`},
		{name: "os.date", body: `return { ok = #os.date("%Y-%m-%d") == 10 }`, want: `{"ok":true}`},
		{name: "os.difftime", body: `return os.difftime(10, 4)`, want: `6`},
		{name: "require of a module in the folder", body: `local m = require("mod") return { v = m.v, same = require("mod") == m }`, want: `{"same":true,"v":"mod"}`},
		{name: "require of a module in a subfolder", body: `return require("sub.deep").v`, want: `"deep"`},
		{name: "require shield", body: `return { same = require("shield") == shield }`, want: `{"same":true}`},
		{name: "require of a library", body: `return { s = require("string") == string, os = require("os").execute == nil }`, want: `{"os":true,"s":true}`},
		{name: "loadstring of text", body: `return loadstring("return 1 + 1")()`, want: `2`},
		{name: "loadstring with a syntax error returns nil", body: `local f, err = loadstring("return +") return { f = f == nil, err = type(err) }`, want: `{"err":"string","f":true}`},
		{name: "load of text", body: `local parts = { "return ", "40 + 2" }
		                                local f = load(function() return table.remove(parts, 1) end)
		                                return f()`, want: `42`},
		{name: "print goes to the log", body: `print("hello from", "lua")`, want: ``},
		{name: "collectgarbage is harmless", body: `collectgarbage() collectgarbage("collect") return { c = collectgarbage("count") > 0 }`, want: `{"c":true}`},
		{name: "string methods", body: `return ("ab"):rep(2) .. string.format("%03d", 7) .. ("X"):lower()`, want: `"abab007x"`},
		{name: "table.concat", body: `return table.concat({ 1, "b", 2.5 }, ",")`, want: `"1,b,2.5"`},
		{name: "table.concat with a range", body: `return table.concat({ "a", "b", "c", "d" }, "-", 2, 3)`, want: `"b-c"`},
		{name: "table.concat of a bad value", body: `return table.concat({ "a", {} })`, want: fail},
		{name: "table.concat of many small strings", body: `local t = {} for i = 1, 300000 do t[i] = "x" end return #table.concat(t)`, want: `300000`},
	}
	a, aScript := caseActor("a", "", "", cases)
	a = strings.Replace(a, "script: a.lua", "script: svc/a.lua", 1)
	w := startWorld(t, map[string]string{
		"actors.yaml":          luatest.ConfigYAML("", a),
		"svc/a.lua":            aScript,
		"svc/mod.lua":          `return { v = "mod" }`,
		"svc/sub/deep.lua":     `return { v = "deep" }`,
		"secret.lua":           `return { v = "secret" }`,
		"outside/secret.lua":   `return { v = "secret" }`,
		"svc/sub/.placeholder": ``,
	})
	if err := os.Symlink(filepath.Join(w.Dir, "secret.lua"), filepath.Join(w.Dir, "svc", "link.lua")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w.Dir, "outside"), filepath.Join(w.Dir, "svc", "linkdir")); err != nil {
		t.Fatal(err)
	}
	runCases(t, w, "a", cases)
	if testing.Verbose() {
		for _, r := range w.Logs.Records("handler failed") {
			t.Logf("%s: %s", r["task"], r["error"])
		}
	}
	if _, err := os.Stat("/tmp/shield-escaped"); err == nil {
		t.Fatal("os.execute ran")
	}
	if got := w.Logs.Records("hello from\tlua"); len(got) != 1 || got[0]["service"] != "a" {
		t.Fatalf("print: %v", got)
	}
}

// TestBombs checks that what would build huge strings, or run in one Go
// call past any budget, is stopped and leaves the process and the VM fine.
func TestBombs(t *testing.T) {
	const exhausted = "client_rpc.resource_exhausted"
	cases := []luaCase{
		{name: "string.rep 2^40", body: `return #string.rep("a", 2^40)`, want: exhausted, msg: `string.rep`},
		{name: "string.rep as a method", body: `return #("ab"):rep(2^31)`, want: exhausted},
		{name: "string.rep with a separator", body: `return #string.rep("a", 2^23, "bc")`, want: exhausted},
		{name: "table.concat of big strings", body: `local s = string.rep("a", 2^23) local t = {} for i = 1, 2000 do t[i] = s end return #table.concat(t)`, want: exhausted, msg: `table.concat`},
		{name: "table.concat with a big separator", body: `local t = {} for i = 1, 2000 do t[i] = "" end return #table.concat(t, string.rep("a", 2^23))`, want: exhausted},
		{name: "gsub growing", body: `return #string.gsub(string.rep("a", 2^20), "a", string.rep("b", 64))`, want: exhausted},
		{name: "backtracking pattern", body: `return string.find(string.rep("a", 400), ".-.-.-.-b$")`, want: exhausted, msg: `match`},
		{name: "string.format width", body: `return string.format("%099999999d", 1)`, want: exhausted},
		{name: "loadstring of a huge chunk", body: `return loadstring("return " .. string.rep("(", 2^21) .. "1" .. string.rep(")", 2^21))`, want: exhausted},
		{name: "a limit caught by pcall is the error table", body: `local ok, e = pcall(string.rep, "a", 2^40) return { ok = ok, code = e.code }`, want: `{"code":"client_rpc.resource_exhausted","ok":false}`},
		{name: "doubling concatenation", body: `local s = "a" while true do s = s .. s end`, want: exhausted, msg: `'\.\.': result of 33554432 bytes exceeds max_string_bytes \(16777216\)`},
		{name: "concatenation in a coroutine", body: `local co = coroutine.wrap(function() local s = "a" while true do s = s .. s end end) return co()`, want: exhausted, msg: `'\.\.': result of`},
		{name: "still serving", body: `return "ok"`, want: `"ok"`},
	}
	// The budget is long enough for the string library's own limits (and
	// the `..` operator's, gopher-lua patch 12) to stop each bomb first,
	// even under the race detector.
	budget, within := "5s", 4*time.Second
	if raceEnabled {
		budget, within = "60s", 60*time.Second
	}
	a, aScript := caseActor("a", "handler_timeout: "+budget, "", cases)
	runtime.GC()
	top := fmt.Sprintf("lua: {heap_limit_bytes: %d}\n", heapBytes()+64<<20)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML(top, a), "a.lua": aScript})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := heapBytes()
			start := time.Now()
			r := w.AwaitFor(t, w.Send(t, "a", uint32(i+1), "{}"), within+10*time.Second)
			if alt := strings.Split(c.want, "|"); len(alt) == 2 {
				if r.Err == nil || string(r.Err.Code) != alt[0] && string(r.Err.Code) != alt[1] {
					t.Fatalf("got %s %v, want %s", r.Body, r.Err, c.want)
				}
			} else {
				luatest.Expect(t, r, c.want, c.msg)
			}
			if took := time.Since(start); took > within {
				t.Fatalf("took %v", took)
			}
			if heapBytes() > before+64<<20 {
				t.Fatalf("heap grew from %d to %d", before, heapBytes())
			}
		})
	}
}

func heapBytes() uint64 { return testutil.RuntimeMetric("/memory/classes/heap/objects:bytes") }
