package luavm

import (
	"runtime/metrics"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
)

// The base and table library functions below do their work in one Go call,
// where the per-instruction budget check cannot reach them, so each gets the
// bound the string library has (see luavm/strlib): what one call may build
// or compile is capped before anything is allocated.

// maxChunkBytes caps the source that load and loadstring compile at run
// time. Compiling is one uninterruptible Go call whose time grows with the
// nesting of the source (8 MB of parentheses take 18 s); a service's own
// modules come through require, which this does not limit.
const maxChunkBytes = 1 << 20

// installBounded replaces table.concat, load, loadstring and
// collectgarbage. It runs after the sandbox is built.
func (vm *VM) installBounded() {
	L := vm.l
	g := L.G.Global
	tbl := g.RawGetString("table").(*lua.LTable)
	tbl.RawSetString("concat", L.NewFunction(vm.tableConcat))
	g.RawSetString("loadstring", L.NewFunction(vm.loadString))
	g.RawSetString("load", L.NewFunction(vm.loadReader))
	g.RawSetString("collectgarbage", L.NewFunction(collectGarbage))
}

// exhausted raises client_rpc.resource_exhausted.
func (vm *VM) exhausted(L *lua.LState, format string, args ...any) {
	vm.raise(L, codes.ResourceExhausted, format, args...)
}

// tableConcat is Lua 5.1's table.concat(t [, sep [, i [, j]]]) with the
// result capped at lua.max_string_bytes. gopher-lua's pushes every element
// on the registry (so a table of more than about 128k strings fails with
// "registry overflow") and has no size cap.
func (vm *VM) tableConcat(L *lua.LState) int {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	i := L.OptInt(3, 1)
	j := L.OptInt(4, t.Len())
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	max := vm.spec.MaxStringBytes
	var size int64
	for k := i; k <= j; k++ {
		v := t.RawGetInt(k)
		switch v.(type) {
		case lua.LString, lua.LNumber:
		default:
			L.RaiseError("invalid value (at index %d) in table for 'concat'", k)
		}
		size += int64(len(lua.LVAsString(v)))
		if k < j {
			size += int64(len(sep))
		}
		if size > max {
			vm.exhausted(L, "table.concat: result of more than %d bytes exceeds max_string_bytes (%d)", size, max)
		}
	}
	var b strings.Builder
	b.Grow(int(size))
	for k := i; k <= j; k++ {
		b.WriteString(lua.LVAsString(t.RawGetInt(k)))
		if k < j {
			b.WriteString(sep)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// loadString is loadstring(s [, name]): text chunks only, at most
// maxChunkBytes.
func (vm *VM) loadString(L *lua.LState) int {
	return vm.loadChunk(L, L.CheckString(1), L.OptString(2, "<string>"))
}

// loadReader is load(fn [, name]): the pieces fn returns, joined, as
// loadstring.
func (vm *VM) loadReader(L *lua.LState) int {
	fn := L.CheckFunction(1)
	name := L.OptString(2, "=(load)")
	var b strings.Builder
	for {
		L.Push(fn)
		L.Call(0, 1)
		v := L.Get(-1)
		L.Pop(1)
		s, ok := v.(lua.LString)
		if v == lua.LNil || ok && s == "" {
			break
		}
		if !ok {
			L.Push(lua.LNil)
			L.Push(lua.LString("reader function must return a string"))
			return 2
		}
		if b.Len()+len(s) > maxChunkBytes {
			vm.exhausted(L, "load: chunk longer than %d bytes", maxChunkBytes)
		}
		b.WriteString(string(s))
	}
	return vm.loadChunk(L, b.String(), name)
}

// loadChunk compiles src. Like Lua's load it returns nil and a message for
// a chunk that does not compile; a binary chunk is refused the same way,
// since gopher-lua has no bytecode loader and bytecode would bypass the
// compiler's checks anyway.
func (vm *VM) loadChunk(L *lua.LState, src, name string) int {
	if strings.HasPrefix(src, "\x1b") {
		L.Push(lua.LNil)
		L.Push(lua.LString("binary chunks cannot be loaded in a shield VM"))
		return 2
	}
	if len(src) > maxChunkBytes {
		vm.exhausted(L, "load: chunk longer than %d bytes", maxChunkBytes)
	}
	proto, err := compileChunk([]byte(src), name)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(loadMessage(err, name)))
		return 2
	}
	L.Push(L.NewFunctionFromProto(proto))
	return 1
}

// collectGarbage is collectgarbage(opt) without the collection: gopher-lua
// runs runtime.GC for every call, so one service calling it in a loop
// would stall every goroutine of the process. "count" reports the Go heap
// (in KiB, shared by every VM); everything else does nothing.
func collectGarbage(L *lua.LState) int {
	if L.OptString(1, "collect") == "count" {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			L.Push(lua.LNumber(float64(s[0].Value.Uint64()) / 1024))
			return 1
		}
	}
	L.Push(lua.LNumber(0))
	return 1
}
