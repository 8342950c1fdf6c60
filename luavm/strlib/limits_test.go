package strlib

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// hook records what OnExceeded was told and raises an error table, as the
// runtime's hook does with client_rpc.resource_exhausted.
type hook struct {
	whats []string
}

func (h *hook) onExceeded(L *lua.LState, what string) {
	h.whats = append(h.whats, what)
	t := L.NewTable()
	t.RawSetString("code", lua.LString("client_rpc.resource_exhausted"))
	t.RawSetString("message", lua.LString(what))
	L.Error(t, 1)
}

// raisedCode returns the code field of the error table a call raised.
func raisedCode(err error) string {
	var apiErr *lua.ApiError
	if !errors.As(err, &apiErr) {
		return ""
	}
	t, ok := apiErr.Object.(*lua.LTable)
	if !ok {
		return ""
	}
	return t.RawGetString("code").String()
}

// totalAlloc returns the bytes allocated by the process so far. Measuring
// cumulative allocation, not the live heap, proves the oversized string
// was never built, not merely that it was collected again.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func TestSizeLimits(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name  string
		max   int    // MaxStringBytes, 0 for the default
		setup string // run before measuring
		code  string
		what  string // prefix of OnExceeded's what
	}{
		{name: "rep 2^40", code: `return string.rep("a", 2^40)`, what: "string.rep: result of 1099511627776 bytes exceeds max_string_bytes (16777216)"},
		{name: "method rep 1e9", code: `return ("a"):rep(1e9)`, what: "string.rep: result of 1000000000 bytes"},
		{name: "rep with separator", code: `return string.rep("ab", 1e8, ",")`, what: "string.rep: result of 299999999 bytes"},
		{name: "rep 2^70", code: `return string.rep("a", 2^70)`, what: "string.rep: result of"},
		{name: "rep of a long string", setup: `big = string.rep("x", 2^20)`, code: `return big:rep(17)`, what: "string.rep: result of 17825792 bytes"},
		{name: "rep separator only", code: `return string.rep("", 2^40, ",")`, what: "string.rep: result of"},
		{
			name: "gsub doubling", max: mib,
			setup: `s = string.rep("a", 600000)`,
			code:  `for i = 1, 10 do s = s:gsub("a", "aa") end return s`,
			what:  "string.gsub: result of 1048578 bytes exceeds max_string_bytes (1048576)",
		},
		{
			name: "gsub function result", max: mib,
			setup: `chunk = string.rep("y", 4096)`,
			code:  `return (string.rep("a", 1000):gsub("a", function() return chunk end))`,
			what:  "string.gsub: result of",
		},
		{name: "format width", code: `return string.format("%99999d", 1)`, what: "string.format: width or precision longer than 2 digits"},
		{name: "format precision", code: `return string.format("%.100f", 1)`, what: "string.format: width or precision longer than 2 digits"},
		{
			name: "format result", max: mib,
			setup: `big = string.rep("x", 600000)`,
			code:  `return string.format("%s%s", big, big)`,
			what:  "string.format: result of 1200000 bytes",
		},
		{
			name: "format quoted", max: mib,
			setup: `big = string.rep("\0", 300000)`,
			code:  `return string.format("%q", big)`,
			what:  "string.format: result of 1200002 bytes",
		},
		{name: "char", max: 4, code: `return string.char(1, 2, 3, 4, 5)`, what: "string.char: result of 5 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &hook{}
			L := newState(t, Limits{MaxStringBytes: c.max, OnExceeded: h.onExceeded})
			if c.setup != "" {
				doString(t, L, c.setup)
			}
			fn, err := L.LoadString(c.code)
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			before := totalAlloc()
			_, err = callFn(L, fn)
			grown := totalAlloc() - before
			if code := raisedCode(err); code != "client_rpc.resource_exhausted" {
				t.Fatalf("err = %v, want the hook's error table", err)
			}
			if len(h.whats) != 1 || !strings.HasPrefix(h.whats[0], c.what) {
				t.Fatalf("OnExceeded got %q, want one starting %q", h.whats, c.what)
			}
			// The budget is the cap itself for results built as they go
			// (gsub, format) plus a little for the VM; nothing near the
			// size that was asked for.
			if limit := uint64(max(c.max, 0)) + 3*mib; grown > limit {
				t.Errorf("allocated %d bytes during the call, want at most %d", grown, limit)
			}
		})
	}
}

func TestSizeLimitAllowsTheCapItself(t *testing.T) {
	L := newState(t, Limits{MaxStringBytes: 1000})
	doString(t, L, `
		assert(#string.rep("a", 1000) == 1000)
		assert(#string.rep("ab", 334, "") == 668)
		assert(#string.rep("a", 500, "b") == 999)
		assert(#string.gsub(string.rep("a", 500), "a", "bb") == 1000)
		assert(#string.format("%s%s", string.rep("a", 500), string.rep("b", 500)) == 1000)
		assert(not pcall(string.rep, "a", 1001))
		assert(not pcall(string.rep, "a", 501, "b"))
	`)
}

// TestPlainErrorWithoutHook checks the fallback: no OnExceeded, a plain
// Lua error whose message names the function and the limit.
func TestPlainErrorWithoutHook(t *testing.T) {
	L := newState(t, DefaultLimits())
	err := L.DoString(`return string.rep("a", 2^40)`)
	if err == nil || !strings.Contains(err.Error(), "string.rep: result of 1099511627776 bytes exceeds max_string_bytes (16777216)") {
		t.Fatalf("err = %v", err)
	}
}

// TestHookThatReturns: a hook that forgets to raise must not let the call
// go on to allocate.
func TestHookThatReturns(t *testing.T) {
	called := 0
	L := newState(t, Limits{OnExceeded: func(*lua.LState, string) { called++ }})
	err := L.DoString(`return string.rep("a", 2^40)`)
	if err == nil || called != 1 {
		t.Fatalf("err = %v, hook called %d times", err, called)
	}
}

// slowFind is the pattern of the incident: on 300 bytes without a 'b' it
// backtracks through about n^4/24 positions.
const slowFind = `return string.find(string.rep("a", 300), ".-.-.-.-b$")`

func TestContextDeadlineStopsMatching(t *testing.T) {
	for _, c := range []struct{ name, code string }{
		{"find", slowFind},
		{"match", `return string.match(string.rep("a", 300), ".-.-.-.-b$")`},
		{"gsub", `return string.gsub(string.rep("a", 300), ".-.-.-.-b$", "")`},
		{"gmatch", `for x in string.gmatch(string.rep("a", 300), ".-.-.-.-b$") do end`},
		{"coroutine", `return coroutine.wrap(function() return string.find(string.rep("a", 300), ".-.-.-.-b$") end)()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A budget far beyond the deadline, so only the context stops it.
			L := newState(t, Limits{MaxMatchSteps: 1 << 60})
			L.Push(L.NewFunction(lua.OpenCoroutine))
			L.Call(0, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			L.SetContext(ctx)
			start := time.Now()
			err := L.DoString(c.code)
			elapsed := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
				t.Fatalf("err = %v, want the context's error", err)
			}
			if elapsed > 5*time.Second {
				t.Fatalf("stopped after %v, want about 200ms", elapsed)
			}
			t.Logf("stopped after %v", elapsed)
		})
	}
}

func TestContextAlreadyCancelled(t *testing.T) {
	L := newState(t, Limits{MaxMatchSteps: 1 << 60})
	ctx, cancel := context.WithCancel(context.Background())
	L.SetContext(ctx)
	cancel()
	// Calling string.find directly skips the VM's own per-instruction check,
	// so the matcher's check is what stops it.
	_, err := callFn(L, L.GetField(L.GetGlobal("string"), "find"), lua.LString(strings.Repeat("a", 300)), lua.LString(".-.-.-.-b$"))
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("err = %v, want %v", err, context.Canceled)
	}
}

// TestStepLimitWithoutContext: with no context the budget stops the
// incident's pattern. A tenth of the default budget keeps the test quick
// under the race detector; BenchmarkStepBudget times the default.
func TestStepLimitWithoutContext(t *testing.T) {
	h := &hook{}
	L := newState(t, Limits{MaxMatchSteps: DefaultMaxMatchSteps / 10, OnExceeded: h.onExceeded})
	start := time.Now()
	_, err := callFn(L, mustLoad(t, L, slowFind))
	elapsed := time.Since(start)
	if raisedCode(err) != "client_rpc.resource_exhausted" {
		t.Fatalf("err = %v", err)
	}
	want := "string.find: pattern matching took more than max_match_steps (1000000)"
	if len(h.whats) != 1 || h.whats[0] != want {
		t.Fatalf("OnExceeded got %q, want %q", h.whats, want)
	}
	t.Logf("a budget of 10^6 steps spent in %v", elapsed)
}

// TestStepBudgetIsPerCall: many cheap calls never add up to the budget.
func TestStepBudgetIsPerCall(t *testing.T) {
	L := newState(t, Limits{MaxMatchSteps: 1000})
	doString(t, L, `
		for i = 1, 2000 do assert(string.find("hello world", "w%a+")) end
		local n = 0
		for w in string.gmatch(string.rep("word ", 400), "%a+") do n = n + 1 end
		assert(n == 400)
		assert(not pcall(string.find, string.rep("a", 100), ".-.-b"))
	`)
}

func TestMatcherStructuralLimits(t *testing.T) {
	L := newState(t, DefaultLimits())
	for _, c := range []struct{ code, msg string }{
		{`string.match(string.rep("a", 300), string.rep("a?", 300))`, "pattern too complex"},
		{`string.match("a", string.rep("(", 250) .. "a" .. string.rep(")", 250))`, "too many captures"},
		{`string.find("a", string.rep("()", 33))`, "too many captures"},
		{`string.byte(string.rep("a", 9000), 1, -1)`, "string slice too long"},
	} {
		err := L.DoString(c.code)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want %q", c.code, err, c.msg)
		}
	}
	// 32 captures is the limit, not over it.
	doString(t, L, `assert(select("#", string.find("a", string.rep("()", 32))) == 34)`)
}

func mustLoad(tb testing.TB, L *lua.LState, code string) *lua.LFunction {
	tb.Helper()
	fn, err := L.LoadString(code)
	if err != nil {
		tb.Fatal(err)
	}
	return fn
}

// TestHiddenWorkIsCharged: work that is not a match attempt still counts
// toward the budget, so neither stalls a VM for minutes: a 60 KB set walked
// for every subject byte, and a replacement of thousands of escapes that
// each add nothing to the result. Uncharged, each case runs for minutes
// (10^10 byte comparisons or more) before its few match steps add up; the
// time bound below is loose on purpose, for loaded machines and -race.
func TestHiddenWorkIsCharged(t *testing.T) {
	for _, c := range []struct{ name, code string }{
		{"long set", `return string.find(string.rep("a", 1e6), "[" .. string.rep("b", 60000) .. "a]*c")`},
		{"long set lazily", `return string.find(string.rep("a", 1e6), "[" .. string.rep("b", 60000) .. "a]-c")`},
		{"long set repeated", `return string.find(string.rep("a", 1e6), string.rep("[" .. string.rep("b", 6000) .. "a]", 100) .. "c")`},
		{"frontier with a long set", `return string.find(string.rep("a", 1e6), "%f[" .. string.rep("b", 60000) .. "]")`},
		{"empty escapes", `return string.gsub(string.rep("a", 1e6), "(x?)", string.rep("%1", 30000))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hook{}
			L := newState(t, Limits{MaxMatchSteps: DefaultMaxMatchSteps / 10, OnExceeded: h.onExceeded})
			start := time.Now()
			err := L.DoString(c.code)
			if raisedCode(err) != "client_rpc.resource_exhausted" || len(h.whats) != 1 || !strings.Contains(h.whats[0], "max_match_steps") {
				t.Fatalf("err = %v, OnExceeded got %q", err, h.whats)
			}
			if elapsed := time.Since(start); elapsed > 20*time.Second {
				t.Fatalf("took %v", elapsed)
			}
		})
	}
}
