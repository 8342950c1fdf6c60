package strlib

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// Benchmarks of this package against gopher-lua's own library on typical
// gateway work: pulling fields out of a short string and rewriting words.
// Both are called from Go the same way, so the difference is the library.

type benchCase struct {
	name string
	fn   string
	args []lua.LValue
}

var benchCases = []benchCase{
	{"find/captures", "find", luaArgs("player_id=12345&name=bob&level=7", "name=(%w+)")},
	{"match/anchored", "match", luaArgs("  trim me please  ", "^%s*(.-)%s*$")},
	{"find/plain", "find", luaArgs(strings.Repeat("lorem ipsum ", 20)+"needle", "needle", 1, true)},
	{"gsub/string", "gsub", luaArgs("hello world from the game server", "%w+", "<%0>")},
	{"gsub/escape", "gsub", luaArgs(`say "hi" \ bye`, `(["\\])`, `\%1`)},
	{"format/mixed", "format", luaArgs("%s scored %d points (%.2f%%)", "bob", 1234, 56.789)},
}

func BenchmarkLibraries(b *testing.B) {
	for _, lib := range []struct {
		name string
		L    *lua.LState
	}{
		{"strlib", newState(b, DefaultLimits())},
		{"gopher-lua", newOriginal(b)},
	} {
		for _, c := range benchCases {
			b.Run(c.name+"/"+lib.name, func(b *testing.B) {
				L := lib.L
				fn := L.GetField(L.GetGlobal("string"), c.fn)
				b.ReportAllocs()
				for b.Loop() {
					if err := L.CallByParam(lua.P{Fn: fn, NRet: 0, Protect: false}, c.args...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStepBudget measures how long a call takes to spend the default
// budget of DefaultMaxMatchSteps on the incident's pattern: the worst a
// script can make one library call last when no context is set.
func BenchmarkStepBudget(b *testing.B) {
	L := newState(b, DefaultLimits())
	fn := L.GetField(L.GetGlobal("string"), "find")
	args := luaArgs(strings.Repeat("a", 300), ".-.-.-.-b$")
	for b.Loop() {
		if err := L.CallByParam(lua.P{Fn: fn, NRet: 0, Protect: true}, args...); err == nil {
			b.Fatal("the budget was not spent")
		}
	}
}
