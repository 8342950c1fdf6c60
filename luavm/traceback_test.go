package luavm_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

// TestTracebackFrames checks how each kind of frame reads in an incident's
// traceback: Go functions as [C], named and unnamed Lua functions as Lua
// 5.1 names them, and the handler by where it is defined.
func TestTracebackFrames(t *testing.T) {
	const prelude = `local obj = {}
function obj:boom() error("method") end
local function inner() error("inner") end
local function relay() return inner() end`
	cases := []struct {
		luaCase
		frames []string // regexps of the traceback's lines after the first, src standing for the script's path
	}{
		{luaCase: luaCase{name: "error in the handler", body: `error("direct")`},
			frames: []string{`\[C\]: in function 'error'`, `src:\d+: in function <src:\d+>`}},
		{luaCase: luaCase{name: "a runtime error in the handler", body: `local t = nil; return t.x`},
			frames: []string{`src:\d+: in function <src:\d+>`}},
		{luaCase: luaCase{name: "a method", body: `obj:boom()`},
			frames: []string{`\[C\]: in function 'error'`, `src:\d+: in function 'boom'`, `src:\d+: in function <src:\d+>`}},
		// The handler's frame became inner's.
		{luaCase: luaCase{name: "a tail call", body: `return inner()`},
			frames: []string{`\[C\]: in function 'error'`, `src:4: in function <src:4>`, `\(tail call\): \?`}},
		{luaCase: luaCase{name: "a tail call inside", body: `relay() return 1`},
			frames: []string{`\[C\]: in function 'error'`, `src:4: in function <src:4>`, `\(tail call\): \?`, `src:\d+: in function <src:\d+>`}},
		{luaCase: luaCase{name: "two tail calls", body: `return relay()`},
			frames: []string{`\[C\]: in function 'error'`, `src:4: in function <src:4>`, `\(tail call\): \?`, `\(tail call\): \?`}},
		{luaCase: luaCase{name: "a callback of a Go function", body: `table.sort({3, 1, 2}, function(a, b) error("cmp") end)`},
			frames: []string{`\[C\]: in function 'error'`, `src:\d+: in function <src:\d+>`, `\[C\]: in function 'sort'`, `src:\d+: in function <src:\d+>`}},
	}
	lc := make([]luaCase, len(cases))
	for i, c := range cases {
		lc[i] = c.luaCase
	}
	a, aScript := caseActor("a", "", prelude, lc)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": aScript})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.Ask(t, "a", uint32(i+1), "{}")
			if r.Err == nil {
				t.Fatalf("answered %s", r.Body)
			}
			m := luatest.IncidentMsg.FindStringSubmatch(r.Err.Message)
			if m == nil {
				t.Fatalf("message %q", r.Err.Message)
			}
			var tb string
			for _, rec := range w.Logs.Records("handler failed") {
				if rec["incident"] == m[1] {
					tb = rec["traceback"].(string)
				}
			}
			want := "^stack traceback:"
			for _, f := range c.frames {
				want += "\n\t" + strings.ReplaceAll(f, "src", `\S*/a\.lua`)
			}
			if !regexp.MustCompile(want + "$").MatchString(tb) {
				t.Errorf("traceback\n%s\nwant\n%s", tb, want)
			}
		})
	}
}
