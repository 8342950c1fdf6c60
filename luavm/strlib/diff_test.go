package strlib

import (
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The differential tests run the same calls through this package and
// through gopher-lua's own string library and require equal results. The
// cases are ordinary use, where gopher-lua agrees with Lua 5.1; the places
// where it does not are in compat_test.go with Lua 5.1's answers.

// patternCase is a subject, a pattern and an optional init (0 = absent).
type patternCase struct {
	s, p string
	init int
}

var patternCases = []patternCase{
	{"hello world", "o", 0},
	{"hello world", "o", 6},
	{"hello world", "o", -3},
	{"hello world", "l+", 0},
	{"hello world", "(h)(e)", 0},
	{"hello world", "()ll()", 0},
	{"hello world", "(l)(l)(o)", 0},
	{"hello world", "w.r", 0},
	{"hello world", "^hello", 0},
	{"hello world", "^world", 0},
	{"hello world", "world$", 0},
	{"hello world", "hello$", 0},
	{"hello world", "%s", 0},
	{"hello world", "%S+", 0},
	{"hello world", "%w+", 5},
	{"hello world", "x*", 0},
	{"hello world", "l*", 3},
	{"hello world", "l-o", 0},
	{"hello world", "x?h", 0},
	{"hello world", "[aeiou]", 0},
	{"hello world", "[^aeiou ]+", 0},
	{"hello world", "[a-f]", 0},
	{"hello world", "[%s%d]", 0},
	{"  trim me  ", "^%s*(.-)%s*$", 0},
	{"key = value", "^(%w+)%s*=%s*(%w+)$", 0},
	{"2024-01-15", "(%d+)-(%d+)-(%d+)", 0},
	{"2024-01-15", "%d%d%d%d", 0},
	{"a.b.c", "%.", 0},
	{"a.b.c", ".", 0},
	{"a+b", "a%+b", 0},
	{"THE (quick) fox", "%((%a+)%)", 0},
	{"f(a(b)c)d", "%b()", 0},
	{"x = [[long]] y", "%b[]", 0},
	{"no parens", "%b()", 0},
	{"[test]", "%[(.*)%]", 0},
	{"abc123def456", "%d+", 0},
	{"abc123def456", "(%a+)(%d+)", 7},
	{"abc", "%a%a%a%a", 0},
	{"abc", "b", -1},
	{"abc", "b", -2},
	{"abc", "b", -10},
	{"abc", "c", 3},
	{"abc", "", 0},
	{"", "", 0},
	{"", "a*", 0},
	{"", "^$", 0},
	{"aaa", "a-", 0},
	{"aaa", "a-$", 0},
	{"aaab", "a*b", 0},
	{"aaab", "a+b", 0},
	{"aaab", "a?b", 0},
	{"aaab", "a-b", 0},
	{"<a><b>", "<(.-)>", 0},
	{"<a><b>", "<(.*)>", 0},
	{"path/to/file.txt", "([^/]+)$", 0},
	{"path/to/file.txt", "^(.*)/", 0},
	{"path/to/file.txt", "%.(%w+)$", 0},
	{"CamelCaseName", "%u%l+", 0},
	{"tab\there", "%c", 0},
	{"a,b;c", "%p", 0},
	{"0x1F", "0x(%x+)", 0},
	{"mixed CASE", "%U+", 0},
	{"hello hello", "(h%a+) %1", 0},
	{"abab", "(ab)%1", 0},
	{"user@example.com", "^[%w._%-]+@[%w.%-]+%.%a+$", 0},
	{"192.168.0.1", "^(%d+)%.(%d+)%.(%d+)%.(%d+)$", 0},
	{"  x", "^%s*", 0},
	{"line1\nline2", "[^\n]+", 0},
	{"a\000b", "%z", 0},
	{"a\000b", "a.b", 0},
	{"\xff\xfe", "[\x80-\xff]+", 0},
	{"v=1.25", "v=(%d+%.?%d*)", 0},
	{"--comment", "^%-%-(.*)", 0},
	{"$100", "%$(%d+)", 0},
	{"a$b", "a$b", 0},
	{"a^b", "a^b", 0},
}

func TestDifferentialFindMatch(t *testing.T) {
	mine, orig := newState(t, DefaultLimits()), newOriginal(t)
	for _, c := range patternCases {
		for _, fn := range []string{"find", "match"} {
			args := luaArgs(c.s, c.p)
			if c.init != 0 {
				args = append(args, lua.LNumber(c.init))
			}
			want, werr := callString(orig, fn, args...)
			if werr != nil {
				t.Fatalf("original %s(%q, %q, %d): %v", fn, c.s, c.p, c.init, werr)
			}
			got, err := callString(mine, fn, args...)
			if err != nil {
				t.Errorf("%s(%q, %q, %d): %v", fn, c.s, c.p, c.init, err)
				continue
			}
			if show(got) != show(want) {
				t.Errorf("%s(%q, %q, %d) = %s, gopher-lua %s", fn, c.s, c.p, c.init, show(got), show(want))
			}
		}
	}
}

func TestDifferentialGmatch(t *testing.T) {
	mine, orig := newState(t, DefaultLimits()), newOriginal(t)
	for _, c := range patternCases {
		if c.init != 0 || (len(c.p) > 0 && c.p[0] == '^') {
			continue // gmatch has no init; '^' is literal in Lua 5.1 (compat_test.go)
		}
		want, werr := gmatchAll(orig, c.s, c.p, 100)
		if werr != nil {
			t.Fatalf("original gmatch(%q, %q): %v", c.s, c.p, werr)
		}
		got, err := gmatchAll(mine, c.s, c.p, 100)
		if err != nil {
			t.Errorf("gmatch(%q, %q): %v", c.s, c.p, err)
			continue
		}
		if showSteps(got) != showSteps(want) {
			t.Errorf("gmatch(%q, %q) = %s, gopher-lua %s", c.s, c.p, showSteps(got), showSteps(want))
		}
	}
}

// gsubCase is a gsub call; repl is a string or Lua source of a function or
// table (evaluated in each VM), n is 0 for absent.
type gsubCase struct {
	s, p, repl string
	n          int
	code       bool
}

var gsubCases = []gsubCase{
	{s: "hello world", p: "o", repl: "0"},
	{s: "hello world", p: "o", repl: "0", n: 1},
	{s: "hello world", p: "(%w+)", repl: "<%1>"},
	{s: "hello world", p: "%w+", repl: "%0 %0"},
	{s: "hello world", p: "(%w+) (%w+)", repl: "%2 %1"},
	{s: "hello world", p: "", repl: "-"},
	{s: "hello world", p: "x*", repl: "-"},
	{s: "hello world", p: "l*", repl: "L"},
	{s: "hello world", p: "^h", repl: "H"},
	{s: "hello world", p: "^x", repl: "H"},
	{s: "hello world", p: "d$", repl: "D"},
	{s: "hello world", p: "%s+", repl: ""},
	{s: "  trim  ", p: "^%s*(.-)%s*$", repl: "%1"},
	{s: "a,b,,c", p: ",", repl: ";"},
	{s: "100%", p: "%%", repl: " percent"},
	{s: "abc", p: "%w", repl: "%%"},
	{s: "abc", p: "()", repl: "%1"},
	{s: "abc", p: ".", repl: "%0%0"},
	{s: "$name is $age", p: "%$(%w+)", repl: "{name='bob', age=7}", code: true},
	{s: "$name is $missing", p: "%$(%w+)", repl: "{name='bob'}", code: true},
	{s: "hello world", p: "%w+", repl: "string.upper", code: true},
	{s: "hello world", p: "(%w)(%w*)", repl: "function(a, b) return a:upper() .. b end", code: true},
	{s: "hello world", p: "%w+", repl: "function(w) if w == 'world' then return false end return 'X' end", code: true},
	{s: "1 2 3", p: "%d", repl: "function(d) return d * 2 end", code: true},
	{s: "a b c", p: "%a", repl: "function() end", code: true},
	{s: "abc", p: "()b()", repl: "function(x, y) return x .. ':' .. y end", code: true},
	{s: "f(a(b)c)d", p: "%b()", repl: "[]"},
	{s: "line1\nline2\n", p: "\n", repl: "\\n"},
	{s: "x", p: "x", repl: "a%1b"},
}

func TestDifferentialGsub(t *testing.T) {
	mine, orig := newState(t, DefaultLimits()), newOriginal(t)
	for _, c := range gsubCases {
		results := map[*lua.LState]string{}
		for _, L := range []*lua.LState{mine, orig} {
			var repl lua.LValue = lua.LString(c.repl)
			if c.code {
				doString(t, L, "_repl = "+c.repl)
				repl = L.GetGlobal("_repl")
			}
			args := []lua.LValue{lua.LString(c.s), lua.LString(c.p), repl}
			if c.n != 0 {
				args = append(args, lua.LNumber(c.n))
			}
			vals, err := callString(L, "gsub", args...)
			if err != nil {
				results[L] = "error"
				if L == mine {
					t.Errorf("gsub(%q, %q, %s, %d): %v", c.s, c.p, c.repl, c.n, err)
				}
				continue
			}
			results[L] = show(vals)
		}
		if results[mine] != results[orig] {
			t.Errorf("gsub(%q, %q, %s, %d) = %s, gopher-lua %s", c.s, c.p, c.repl, c.n, results[mine], results[orig])
		}
	}
}

// callCase is a plain function call compared between the two libraries.
type callCase struct {
	fn   string
	args []any
}

var callCases = []callCase{
	{"len", []any{""}},
	{"len", []any{"hello"}},
	{"len", []any{123}},
	{"sub", []any{"hello", 2}},
	{"sub", []any{"hello", 2, 4}},
	{"sub", []any{"hello", -3}},
	{"sub", []any{"hello", -3, -2}},
	{"sub", []any{"hello", 0}},
	{"sub", []any{"hello", 10}},
	{"sub", []any{"hello", 3, 2}},
	{"sub", []any{"hello", -100, 100}},
	{"sub", []any{"hello", 2, -100}},
	{"byte", []any{"hello", 2}},
	{"byte", []any{"hello", 1, 3}},
	{"byte", []any{"hello", -1}},
	{"byte", []any{"hello", 10}},
	{"byte", []any{"hello", 3, 2}},
	{"byte", []any{"", 1}},
	{"char", []any{}},
	{"char", []any{104, 105}},
	{"char", []any{0, 255}},
	{"rep", []any{"ab", 3}},
	{"rep", []any{"ab", 0}},
	{"rep", []any{"ab", -1}},
	{"rep", []any{"", 100}},
	{"reverse", []any{"hello"}},
	{"reverse", []any{""}},
	{"upper", []any{"Hello, World 123"}},
	{"lower", []any{"Hello, World 123"}},
	{"format", []any{"plain"}},
	{"format", []any{"%d items", 3}},
	{"format", []any{"%5d|%-5d|%05d", 42, 42, 42}},
	{"format", []any{"%+d % d %d", 5, 5, -5}},
	{"format", []any{"%.3d", 7}},
	{"format", []any{"%d", 3.9}},
	{"format", []any{"%d", -3.9}},
	{"format", []any{"%x %X %o", 255, 255, 8}},
	{"format", []any{"%#x %#o", 255, 8}},
	{"format", []any{"%5.3x", 10}},
	{"format", []any{"%f %.2f %10.3f", 3.14159, 3.14159, 3.14159}},
	{"format", []any{"%e %.2E", 12345.678, 12345.678}},
	{"format", []any{"%.3g %G", 0.0001234, 1e-10}},
	{"format", []any{"%g", 0.1}},
	{"format", []any{"%s and %s", "this", "that"}},
	{"format", []any{"%10s|%-10s|", "right", "left"}},
	{"format", []any{"%.2s", "abcdef"}},
	{"format", []any{"%s", 42}},
	{"format", []any{"%s", 1.5}},
	{"format", []any{"%d%%", 50}},
	{"format", []any{"%c%c%c", 76, 117, 97}},
	{"format", []any{"[%5s]", "abc"}},
}

func TestDifferentialCalls(t *testing.T) {
	mine, orig := newState(t, DefaultLimits()), newOriginal(t)
	for _, c := range callCases {
		want, werr := callString(orig, c.fn, luaArgs(c.args...)...)
		got, err := callString(mine, c.fn, luaArgs(c.args...)...)
		if (err != nil) != (werr != nil) {
			t.Errorf("%s%v: error %v, gopher-lua %v", c.fn, c.args, err, werr)
			continue
		}
		if show(got) != show(want) {
			t.Errorf("%s%v = %s, gopher-lua %s", c.fn, c.args, show(got), show(want))
		}
	}
}
