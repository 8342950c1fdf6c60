package lua

import (
	"strings"
	"testing"
)

// Shield patch 12: Options.MaxConcatBytes bounds what `..` builds, before
// the join allocates; OnConcatLimit raises its own error; a coroutine
// takes the bound from its parent; 0 leaves concatenation unbounded.
func TestShieldConcatBound(t *testing.T) {
	cases := []struct {
		name   string
		max    int
		onOver bool
		script string
		want   string // "" for no error
	}{
		{"under the bound", 8, false, `s = "ab" .. "cd" .. "ef"`, ""},
		{"at the bound", 8, false, `s = "abcd" .. "efgh"`, ""},
		{"past the bound", 8, false, `s = "abcd" .. "efgh" .. "i"`, "result of 9 bytes exceeds the limit of 8"},
		{"numbers count as their text", 4, false, `s = 12 .. 345`, "result of 5 bytes exceeds the limit of 4"},
		{"doubling stops", 1 << 20, false, `s = "a" while true do s = s .. s end`, "result of 2097152 bytes exceeds the limit of 1048576"},
		{"the hook's error", 8, true, `s = "abcd" .. "efghi"`, "over: 9"},
		{"caught by pcall", 8, false, `local ok, e = pcall(function() return "abcd" .. "efghi" end) s = tostring(ok)`, ""},
		{"in a coroutine", 8, false, `local co = coroutine.create(function() return "abcd" .. "efghi" end) local ok, e = coroutine.resume(co) s = e`, ""},
		{"no bound", 0, false, `s = "a" for i = 1, 20 do s = s .. s end`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			L := NewState(Options{MaxConcatBytes: c.max})
			defer L.Close()
			if c.onOver {
				L.Options.OnConcatLimit = func(L *LState, n int) { L.RaiseError("over: %d", n) }
			}
			err := L.DoString(c.script)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			s := L.GetGlobal("s").String()
			switch c.name {
			case "caught by pcall":
				if s != "false" {
					t.Fatalf("pcall returned %s, want false", s)
				}
			case "in a coroutine":
				if !strings.Contains(s, "result of 9 bytes exceeds the limit of 8") {
					t.Fatalf("the coroutine's error %q", s)
				}
			case "no bound":
				if len(s) != 1<<20 {
					t.Fatalf("len %d, want %d", len(s), 1<<20)
				}
			}
		})
	}
}
