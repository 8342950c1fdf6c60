package strlib

import (
	"errors"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// compatCase is a Lua expression where gopher-lua's string library and Lua
// 5.1 disagree, with Lua 5.1's answer (as show renders it). TestAgainstLua51
// checks the same expressions against a real lua5.1 when one is installed.
type compatCase struct {
	expr string
	want string // "error" when the expression must raise
}

var compatCases = []compatCase{
	{`string.byte("abc")`, `n97`},
	{`string.byte("abc", 2, nil)`, `n98`},
	{`string.match("abc", "x")`, `nil`},
	{`string.find("abc", "", 2)`, `n2,n1`},
	{`string.find("abc", "", 10)`, `n4,n3`},
	{`string.find("abc", "$", 10)`, `n4,n3`},
	{`string.match("hello-z!", "[%a-z]+")`, `"hello-z"`},
	{`string.match("x = 5", "%f[%w]%w+")`, `"x"`},
	{`string.gsub("THE (quick) fox", "%f[%a]%a+", "W")`, `"W (W) W",n3`},
	{`string.find("aXb", "%f[%u]")`, `n2,n1`},
	{`(function() local t = {} for w in string.gmatch("^a^a", "^a") do t[#t+1] = w end return table.concat(t, ",") end)()`, `"^a,^a"`},
	{`string.gsub("abc", "%w", "x", 0)`, `"abc",n0`},
	{`string.gsub("abc", "%w", "x", -1)`, `"abc",n0`},
	{`string.gsub("abc", "%w", "%a")`, `"aaa",n3`},
	{`string.gsub("abc", "%w", function() return {} end)`, `error`},
	{`string.gsub("abc", "(a)", "%2")`, `error`},
	{`string.gsub("abc", "b", true)`, `error`},
	{`string.char(256)`, `error`},
	{`string.char(-1)`, `error`},
	{`string.upper("\195\169a")`, `"\xc3\xa9A"`},
	{`string.lower("\195\128B")`, `"\xc3\x80b"`},
	{`string.upper("\255")`, `"\xff"`},
	{`string.format("%5.1s|", "h\195\169llo")`, `"    h|"`},
	{`string.format("%c", 200)`, `"\xc8"`},
	{`string.format("%3c|%-3c|", 65, 66)`, `"  A|B  |"`},
	{`string.format("%05s", "ab")`, `"   ab"`},
	{`string.format("%q", "a\0b\r\n\"\\")`, `"\"a\\000b\\r\\\x0a\\\"\\\\\""`},
	{`string.format("%d")`, `error`},
	{`string.format("%d", 1, 2)`, `"1"`},
	{`string.format("%y", 1)`, `error`},
	{`string.format("%", 1)`, `error`},
	{`string.format("%d", "x")`, `error`},
	{`string.format("%d", "12")`, `"12"`},
	{`string.format("%5.1f", "2.25")`, `"  2.2"`},
	{`string.format("%u", 3)`, `"3"`},
	{`string.format("%------d", 1)`, `error`},
	{`string.format("%-+ #0d", 1)`, `"+1"`},
	{`string.rep("ab", "3")`, `"ababab"`},
	{`string.sub("hello", "2")`, `"ello"`},
	{`string.find("a+b", "+", 1, true)`, `n2,n2`},
	{`string.find("abc", "b()")`, `n2,n2,n3`},
	{`string.match("  x", "^(%s*)()")`, `"  ",n3`},
	{`string.match("abcabc", "(a)(b)(c)%3")`, `nil`},
	{`string.match("abcc", "(a)(b)(c)%3")`, `"a","b","c"`},
	{`string.match("ab", "(a%1)")`, `error`},
	{`string.match("ab", "%0")`, `error`},
	{`string.match("a", "(()a)")`, `"a",n1`},
	{`string.match("a", "()%1")`, `nil`},
	{`string.find("a", "(")`, `error`},
	{`string.find("a", "a)")`, `nil`}, // no special byte: a plain search
	{`string.match("a", "a)")`, `error`},
	{`string.find("a", "[a")`, `error`},
	{`string.find("a", "a%")`, `error`},
	{`string.find("a", "%b")`, `error`},
	{`string.find("a", "%f")`, `error`},
	{`string.find("a", "%fa")`, `error`},
	{`string.find("a]", "[]]")`, `n2,n2`},
	{`string.find("a-", "[a-]", 2)`, `n2,n2`},
	{`string.find("^", "[%^]")`, `n1,n1`},
	{`string.find("a^", "a^")`, `n1,n2`},
	{`string.find("a$b", "$b")`, `n2,n3`},
	{`string.find("(x)", "(%))")`, `n3,n3,")"`},
	{`string.gsub("abc", "", "-")`, `"-a-b-c-",n4`},
	{`string.gsub("hello world", "o", "0", 1.9)`, `"hell0 world",n1`},
	{`string.gsub("abc", "b", 7)`, `"a7c",n1`},
	{`string.gsub("abc", ".", {a = 1, b = true})`, `error`},
	{`string.gsub("abc", ".", {a = 1, c = false})`, `"1bc",n3`},
	{`string.len(string.rep("x", 3.7))`, `n3`},
}

func TestLua51Compat(t *testing.T) {
	L := newState(t, DefaultLimits())
	for _, c := range compatCases {
		got := evalShow(L, c.expr)
		if got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}

// extensionCases are the deliberate differences from Lua 5.1 (doc.go);
// lua5.1 answers differently, so they are not in compatCases.
var extensionCases = []compatCase{
	{`string.rep("ab", 3, ",")`, `"ab,ab,ab"`},
	{`string.rep("ab", 1, ",")`, `"ab"`},
	{`string.rep("", 3, ",")`, `",,"`},
	{`string.gsub("x", "x", "a%")`, `"a%",n1`},
	{`string.match("a\0b", "a%zb")`, `"a\x00b"`},
	{`string.find("a\0b*", "\0b%*")`, `n2,n4`},
	{`string.format("%s", "a\0b")`, `"a\x00b"`},
	{`string.dump`, `nil`},
	{`string.format("%s %s %s", nil, true, 1.5)`, `"nil true 1.5"`},
	{`string.format("%g", 1/3)`, `"0.3333333333333333"`},
	{`string.format("%x", -1)`, `"-1"`},
	{`string.format("%f", 1/0)`, `"+Inf"`},
	{`string.gfind == string.gmatch`, `boolean`},
	{`("abc"):rep(2)`, `"abcabc"`},
	{`getmetatable("").__index == string`, `boolean`},
}

func TestExtensions(t *testing.T) {
	L := newState(t, DefaultLimits())
	for _, c := range extensionCases {
		got := evalShow(L, c.expr)
		if got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
	// show renders booleans by type; check the two identities by value.
	for _, expr := range []string{`string.gfind == string.gmatch`, `getmetatable("").__index == string`} {
		if err := L.DoString("assert(" + expr + ")"); err != nil {
			t.Errorf("%s: %v", expr, err)
		}
	}
}

// evalShow evaluates a Lua expression in L and renders its values, or
// "error".
func evalShow(L *lua.LState, expr string) string {
	fn, err := L.LoadString("return " + expr)
	if err != nil {
		return "syntax error: " + err.Error()
	}
	vals, err := callFn(L, fn)
	if errors.Is(err, errGoPanic) {
		return err.Error()
	}
	if err != nil {
		return "error"
	}
	return show(vals)
}
