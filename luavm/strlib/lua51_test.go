package strlib

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestAgainstLua51 runs the case tables, the compatibility cases and a few
// thousand generated patterns through a real Lua 5.1 interpreter and through
// this package, and requires the same output line for line. It needs the
// lua5.1 interpreter (Debian package lua5.1, /usr/bin/lua5.1). Where it is
// missing the test is skipped (the differential tests against gopher-lua
// still run), unless SHIELD_REQUIRE_LUA51 is set: .ci/run installs lua5.1
// and sets it, so that in CI a missing interpreter fails instead of
// silently skipping the comparison.
func TestAgainstLua51(t *testing.T) {
	bin := lua51Binary()
	if bin == "" {
		if os.Getenv("SHIELD_REQUIRE_LUA51") != "" {
			t.Fatal("lua5.1 not found on PATH nor at /usr/bin/lua5.1, and SHIELD_REQUIRE_LUA51 is set")
		}
		t.Skip("lua5.1 not installed (Debian: apt-get install lua5.1)")
	}
	script := lua51Script(t)

	cmd := exec.Command(bin, "-")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("lua5.1: %v\n%s", err, out.String())
	}
	want := strings.Split(out.String(), "\n")

	L := newState(t, DefaultLimits())
	var got []string
	L.SetGlobal("print", L.NewFunction(func(L *lua.LState) int {
		got = append(got, L.CheckString(1))
		return 0
	}))
	doString(t, L, script)

	lines := strings.Split(script, "\n")
	fails := 0
	for i, g := range got {
		if i >= len(want) || g != want[i] {
			t.Errorf("%s\n  strlib: %s\n  lua5.1: %s", lines[i+1], g, want[min(i, len(want)-1)])
			if fails++; fails > 20 {
				t.FailNow()
			}
		}
	}
	if len(got) != len(want)-1 {
		t.Errorf("%d lines, lua5.1 %d", len(got), len(want)-1)
	}
}

// lua51Binary is the path of the lua5.1 interpreter: on PATH, or where
// Debian's package puts it; "" when there is none.
func lua51Binary() string {
	if bin, err := exec.LookPath("lua5.1"); err == nil {
		return bin
	}
	const debian = "/usr/bin/lua5.1"
	if fi, err := os.Stat(debian); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return debian
	}
	return ""
}

// lua51Script returns a Lua 5.1 program that prints one line per case. Line
// i+1 of the script is the call whose result is printed line i.
func lua51Script(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	b.WriteString(`local function ser(ok, ...) if not ok then local msg = tostring((...)) if msg:find("bad argument", 1, true) then return "err" end return "err:" .. msg:gsub("^[^:]*:%d+: ", "") end local n = select('#', ...) if n == 0 then return "none" end local t = {} for i = 1, n do local v = select(i, ...) if type(v) == "string" then t[i] = "s" .. (v:gsub(".", function(c) return string.format("%02x", c:byte()) end)) elseif type(v) == "number" then t[i] = "n" .. string.format("%.17g", v) else t[i] = type(v) end end return table.concat(t, ",") end local function gm(s, p) local t = {} local ok, err = pcall(function() for a, b, c in string.gmatch(s, p) do t[#t+1] = ser(true, a, b, c) if #t > 50 then break end end end) if not ok then return ser(false, err) end return table.concat(t, "|") end` + "\n")
	call := func(fn string, args ...string) {
		fmt.Fprintf(&b, "print(ser(pcall(%s)))\n", strings.Join(append([]string{"string." + fn}, args...), ", "))
	}
	for _, c := range patternCases {
		for _, fn := range []string{"find", "match"} {
			call(fn, luaQuote(c.s), luaQuote(c.p), fmt.Sprint(c.init))
		}
		fmt.Fprintf(&b, "print(gm(%s, %s))\n", luaQuote(c.s), luaQuote(c.p))
	}
	for _, c := range gsubCases {
		repl := c.repl
		if !c.code {
			repl = luaQuote(repl)
		}
		n := "nil"
		if c.n != 0 {
			n = fmt.Sprint(c.n)
		}
		call("gsub", luaQuote(c.s), luaQuote(c.p), repl, n)
	}
	for _, c := range compatCases {
		fmt.Fprintf(&b, "print(ser(pcall(function() return %s end)))\n", c.expr)
	}
	for _, c := range callCases {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			if s, ok := a.(string); ok {
				args[i] = luaQuote(s)
			} else {
				args[i] = fmt.Sprint(a)
			}
		}
		if c.fn == "format" && strings.ContainsAny(fmt.Sprint(c.args[0]), "gGeE") {
			continue // gopher-lua's float printing is kept on purpose
		}
		call(c.fn, args...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if raceEnabled || testing.Short() {
		n = 300 // gopher-lua runs ~50 times slower under -race
	}
	for range n {
		data := make([]byte, 64)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		r := &genReader{data: data}
		s, p := r.genSubject(12), r.genPattern(6, genOptions{other: allOtherItems, broken: true})
		init := fmt.Sprint(int(r.next()%16) - 8)
		call("find", luaQuote(s), luaQuote(p), init)
		call("match", luaQuote(s), luaQuote(p), init)
		call("gsub", luaQuote(s), luaQuote(p), luaQuote("<%0>"), "nil")
		fmt.Fprintf(&b, "print(gm(%s, %s))\n", luaQuote(s), luaQuote(p))
	}
	return b.String()
}

// luaQuote writes s as a Lua string literal that both interpreters read
// alike: printable ASCII as is, everything else as a decimal escape.
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
