package strlib

import (
	"fmt"
	"github.com/shieldrpc/shield/config"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Limits bound what one call of a string function may build or compute.
// A zero or negative size or count means "use DefaultLimits' value", never
// "unlimited": an unbounded library is what this package exists to prevent.
type Limits struct {
	// MaxStringBytes is the longest string any function of the library may
	// build (SPEC: lua.max_string_bytes). A call that would build a longer
	// one raises through OnExceeded before allocating it.
	MaxStringBytes int

	// MaxMatchSteps bounds the work of the pattern matcher in one call of
	// find, match, gsub or one step of a gmatch iterator. A step is one
	// attempt of a pattern item at a subject position, one backtrack, one
	// subject byte scanned by a repetition, %b or a back-reference, eight
	// bytes of a [set] walked, or one escape of a gsub replacement, so
	// steps grow with the work done, not with the size of the result.
	MaxMatchSteps int

	// OnExceeded raises the error a VM sees when a limit is hit. It must not
	// return (it raises, e.g. with L.Error); if it is nil, or returns anyway,
	// the library raises L.RaiseError(what). what is a sentence for logs and
	// clients that starts with the Lua function's name, e.g.
	// "string.rep: result of 1099511627776 bytes exceeds max_string_bytes
	// (16777216)"; it never quotes the strings involved.
	OnExceeded func(L *lua.LState, what string)
}

// Default limits. DefaultMaxStringBytes is lua.max_string_bytes's default,
// defined by package config with the other defaults. Ten million match steps take 0.12 to 0.2 s on the 2-core reference machine
// (BenchmarkStepBudget, the incident's pattern): the longest one call can
// run when no context is set, while ordinary linear patterns, at one to two
// steps per subject byte, still scan 5 to 10 MB in a single call.
const (
	DefaultMaxStringBytes = config.DefaultMaxStringBytes
	DefaultMaxMatchSteps  = 10_000_000
)

// maxByteResults is how many values string.byte may return at once, Lua
// 5.1's LUAI_MAXCSTACK: each value is a registry slot, so without it
// s:byte(1, -1) on a 16 MiB string would ask for 16 M slots.
const maxByteResults = 8000

// DefaultLimits returns SPEC's defaults and no OnExceeded hook, so limits
// raise plain Lua errors.
func DefaultLimits() Limits {
	return Limits{
		MaxStringBytes: DefaultMaxStringBytes,
		MaxMatchSteps:  DefaultMaxMatchSteps,
	}
}

// library is one VM's copy of the limits; the functions installed by Open
// are closures over it, so two VMs with different limits never share state.
type library struct {
	maxBytes   int
	maxSteps   int
	onExceeded func(L *lua.LState, what string)
}

// Open installs the bounded string library in L: the global "string", the
// "string" entry of package.loaded, and the string metatable's __index, so
// that s:rep(3) and ("x"):format() use it too. It starts from gopher-lua's
// own OpenString, which is the supported way to reach the string metatable,
// then replaces every function in the table it returns and removes dump.
// Open may be called on a state that already has the string library.
func Open(L *lua.LState, lim Limits) {
	lib := newLibrary(lim)
	L.Push(L.NewFunction(lua.OpenString))
	L.Push(lua.LString(lua.StringLibName))
	L.Call(1, 1)
	mod := L.Get(-1).(*lua.LTable)
	L.Pop(1)

	gmatch := L.NewFunction(lib.gmatch)
	for name, fn := range map[string]lua.LValue{
		"byte":    L.NewFunction(lib.byte),
		"char":    L.NewFunction(lib.char),
		"find":    L.NewFunction(lib.find),
		"format":  L.NewFunction(lib.format),
		"gmatch":  gmatch,
		"gfind":   gmatch, // Lua 5.1 with LUA_COMPAT_GFIND, as gopher-lua
		"gsub":    L.NewFunction(lib.gsub),
		"len":     L.NewFunction(lib.len),
		"lower":   L.NewFunction(lib.lower),
		"match":   L.NewFunction(lib.match),
		"rep":     L.NewFunction(lib.rep),
		"reverse": L.NewFunction(lib.reverse),
		"sub":     L.NewFunction(lib.sub),
		"upper":   L.NewFunction(lib.upper),
		// string.dump would hand a sandboxed script a function's bytecode,
		// and gopher-lua cannot load it back anyway.
		"dump": lua.LNil,
	} {
		mod.RawSetString(name, fn)
	}
	L.SetGlobal(lua.StringLibName, mod)
}

// newLibrary applies the defaults to lim.
func newLibrary(lim Limits) *library {
	lib := &library{
		maxBytes:   lim.MaxStringBytes,
		maxSteps:   lim.MaxMatchSteps,
		onExceeded: lim.OnExceeded,
	}
	if lib.maxBytes <= 0 {
		lib.maxBytes = DefaultMaxStringBytes
	}
	if lib.maxSteps <= 0 {
		lib.maxSteps = DefaultMaxMatchSteps
	}
	return lib
}

// exceeded reports a limit through the runtime's hook and raises. The
// RaiseError after the hook is the guarantee that the call never goes on
// to allocate, even if a hook forgets to raise.
func (lib *library) exceeded(L *lua.LState, what string) {
	if lib.onExceeded != nil {
		lib.onExceeded(L, what)
	}
	L.RaiseError("%s", what)
}

// tooLong raises for a string of n bytes that fn would build.
func (lib *library) tooLong(L *lua.LState, fn string, n float64) {
	lib.exceeded(L, fmt.Sprintf("%s: result of %.0f bytes exceeds max_string_bytes (%d)", fn, n, lib.maxBytes))
}

// checkInt is luaL_checkinteger: a number, or a string that converts to one,
// truncated toward zero. Out-of-range values saturate instead of wrapping,
// so string.rep("a", 2^70) is "too long", never "" after an overflow.
func checkInt(L *lua.LState, n int) int {
	return clampInt(float64(L.CheckNumber(n)))
}

// optInt is luaL_optinteger: def when the argument is absent or nil.
func optInt(L *lua.LState, n int, def int) int {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInt(L, n)
}

// intLimit keeps converted integers well inside int on every platform while
// still far beyond any string length.
const intLimit = 1 << 53

// clampInt truncates f toward zero into [-intLimit, intLimit]; NaN is 0.
func clampInt(f float64) int {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= intLimit:
		return intLimit
	case f <= -intLimit:
		return -intLimit
	}
	return int(f)
}

// posrelat turns a Lua string position (negative counts from the end)
// into a 1-based position that is at least 0, as lstrlib.c does.
func posrelat(pos, n int) int {
	if pos < 0 {
		pos += n + 1
	}
	if pos < 0 {
		return 0
	}
	return pos
}
