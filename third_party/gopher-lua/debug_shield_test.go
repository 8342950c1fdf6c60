package lua

import "testing"

// Shield patch 10: GetInfo's "S" reports how many tail calls a frame
// replaced, the levels GetStack gives them after it.
func TestShieldDebugTailCalls(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		tails     int // of the frame that called probe
	}{
		{"no tail call", `local function g() probe() end g()`, 0},
		{"one", `local function g() probe() end local function f() return g() end f()`, 1},
		{"two", `local function g() probe() end local function f() return g() end local function h() return f() end h()`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			L := NewState()
			defer L.Close()
			got := -1
			L.SetGlobal("probe", L.NewFunction(func(L *LState) int {
				dbg, ok := L.GetStack(1) // the Lua function that called probe
				if !ok {
					t.Error("no caller")
					return 0
				}
				if _, err := L.GetInfo("S", dbg, LNil); err != nil {
					t.Error(err)
				}
				got = dbg.TailCalls
				return 0
			}))
			if err := L.DoString(tc.src); err != nil {
				t.Fatal(err)
			}
			if got != tc.tails {
				t.Fatalf("TailCalls %d, want %d", got, tc.tails)
			}
		})
	}
}
