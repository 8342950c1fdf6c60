package strlib

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestOpenReplacesAnOpenedLibrary: a state that already has gopher-lua's
// string library (lua.NewState opens every library) gets the bounded one
// everywhere a script can reach it: the global, package.loaded, and the
// string metatable used by method calls.
func TestOpenReplacesAnOpenedLibrary(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	h := &hook{}
	Open(L, Limits{OnExceeded: h.onExceeded})
	doString(t, L, `
		assert(string.dump == nil, "dump is removed")
		assert(package.loaded.string == string, "package.loaded.string")
		assert(getmetatable("").__index == string, "string metatable")
		assert(("abc"):byte() == 97 and select("#", ("abc"):byte()) == 1, "method calls use the new byte")
		local ok, err = pcall(string.rep, "a", 2^40)
		assert(not ok and err.code == "client_rpc.resource_exhausted")
		ok, err = pcall(function() return ("a"):rep(2^40) end)
		assert(not ok and err.code == "client_rpc.resource_exhausted")
	`)
	if len(h.whats) != 2 {
		t.Fatalf("OnExceeded called %d times, want 2", len(h.whats))
	}
}

// TestEveryFunctionIsInstalled lists the Lua 5.1 string library.
func TestEveryFunctionIsInstalled(t *testing.T) {
	L := newState(t, DefaultLimits())
	mod := L.GetGlobal("string").(*lua.LTable)
	for _, name := range []string{"byte", "char", "find", "format", "gmatch", "gfind", "gsub", "len", "lower", "match", "rep", "reverse", "sub", "upper"} {
		if fn, ok := mod.RawGetString(name).(*lua.LFunction); !ok || !fn.IsG {
			t.Errorf("string.%s is %v", name, mod.RawGetString(name))
		}
	}
	var names []string
	mod.ForEach(func(k, _ lua.LValue) { names = append(names, k.String()) })
	if len(names) != 15 { // the 14 functions and __index
		t.Errorf("string has %d fields: %v", len(names), names)
	}
}

// TestZeroLimitsMeanDefaults: Limits{} is the defaults, not "no limit".
func TestZeroLimitsMeanDefaults(t *testing.T) {
	for _, lim := range []Limits{{}, {MaxStringBytes: -1, MaxMatchSteps: -1}} {
		lib := newLibrary(lim)
		if lib.maxBytes != DefaultMaxStringBytes || lib.maxSteps != DefaultMaxMatchSteps {
			t.Errorf("newLibrary(%+v) = %d bytes, %d steps", lim, lib.maxBytes, lib.maxSteps)
		}
	}
	if d := DefaultLimits(); d.MaxStringBytes != 16<<20 || d.MaxMatchSteps != 10_000_000 || d.OnExceeded != nil {
		t.Errorf("DefaultLimits() = %+v", d)
	}
	L := newState(t, Limits{})
	doString(t, L, `
		assert(#string.rep("a", 16 * 2^20) == 16 * 2^20)
		assert(not pcall(string.rep, "a", 16 * 2^20 + 1))
	`)
}

// TestQuotedReadsBack: %q of every byte value loads back as the same
// string in gopher-lua.
func TestQuotedReadsBack(t *testing.T) {
	L := newState(t, DefaultLimits())
	doString(t, L, `
		local all = {}
		for i = 0, 255 do all[#all + 1] = string.char(i) end
		all = table.concat(all)
		for _, s in ipairs({all, "", "\0001", "a\r\nb", "\\\"", string.rep("\0", 10)}) do
			local back = loadstring("return " .. string.format("%q", s))()
			assert(back == s, "round trip failed for " .. #s .. " bytes")
		end
	`)
}

// TestGmatchIsLazy: the iterator matches one step at a time, so breaking
// out early costs nothing, and each step has its own budget.
func TestGmatchIsLazy(t *testing.T) {
	L := newState(t, Limits{MaxMatchSteps: 100})
	doString(t, L, `
		local s = string.rep("w ", 1000)
		local n = 0
		for w in s:gmatch("%a+") do n = n + 1 end
		assert(n == 1000, n)
		local it = ("k=v, a=b"):gmatch("(%w+)=(%w+)")
		local k, v = it()
		assert(k == "k" and v == "v")
		k, v = it()
		assert(k == "a" and v == "b")
		assert(it() == nil and it() == nil)
	`)
}

// TestMatchStepErrorsNameTheFunction: what tells which function ran out.
func TestMatchStepErrorsNameTheFunction(t *testing.T) {
	for _, fn := range []string{"find", "match", "gsub", "gmatch"} {
		h := &hook{}
		L := newState(t, Limits{MaxMatchSteps: 1000, OnExceeded: h.onExceeded})
		code := `string.` + fn + `(string.rep("a", 100), ".-.-b")`
		switch fn {
		case "gsub":
			code = `string.gsub(string.rep("a", 100), ".-.-b", "")`
		case "gmatch":
			code = `for x in string.gmatch(string.rep("a", 100), ".-.-b") do end`
		}
		err := L.DoString(code)
		if raisedCode(err) != "client_rpc.resource_exhausted" {
			t.Fatalf("%s: err = %v", fn, err)
		}
		want := "string." + fn + ": pattern matching took more than max_match_steps (1000)"
		if len(h.whats) != 1 || h.whats[0] != want {
			t.Errorf("%s: OnExceeded got %q, want %q", fn, h.whats, want)
		}
	}
}

// TestErrorMessages: pattern errors carry Lua 5.1's wording.
func TestErrorMessages(t *testing.T) {
	L := newState(t, DefaultLimits())
	for _, c := range []struct{ code, msg string }{
		{`string.find("a", "%")`, "malformed pattern (ends with '%')"},
		{`string.find("a", "[a")`, "malformed pattern (missing ']')"},
		{`string.find("a", "(a")`, "unfinished capture"},
		{`string.match("a", "a)")`, "invalid pattern capture"},
		{`string.find("a", "%1")`, "invalid capture index"},
		{`string.find("a", "%b")`, "unbalanced pattern"},
		{`string.find("a", "%f")`, "missing '[' after '%f' in pattern"},
		{`string.gsub("a", "a", "%2")`, "invalid capture index"},
		{`string.gsub("a", "a", function() return {} end)`, "invalid replacement value (a table)"},
		{`string.gsub("a", "a", true)`, "string/function/table expected"},
		{`string.format("%y", 1)`, "invalid option '%y' to 'format'"},
		{`string.format("%d")`, "no value"},
		{`string.format("%------d", 1)`, "invalid format (repeated flags)"},
		{`string.char(300)`, "invalid value"},
	} {
		err := L.DoString(c.code)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want %q", c.code, err, c.msg)
		}
	}
}
