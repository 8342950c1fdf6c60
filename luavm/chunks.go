package luavm

import (
	"bytes"
	"maps"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/shieldrpc/shield/descriptor"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Compiled chunks are shared by every VM of the process. gopher-lua's
// function prototypes are read-only once compiled, and its README
// recommends sharing them between states; each VM makes its own closures
// from them with NewFunctionFromProto.
//
// Sharing is most of what keeps a VM small: gopher-lua's compiler gives
// every function a code buffer of 1,024 instructions and 1,024 line
// numbers (12 KiB) and keeps it in the prototype, so the runtime's own Lua
// alone cost each VM about 200 KiB, and a script with many functions costs
// that again in every instance. compact trims the buffers to their length.

// chunkCache holds the compiled scripts and modules, by path. An entry is
// used only while the file's content is the same, so a VM respawned after
// a deploy runs the new script.
var chunkCache = struct {
	sync.Mutex // guards m
	m          map[string]cachedChunk
}{m: map[string]cachedChunk{}}

type cachedChunk struct {
	src   string
	proto *lua.FunctionProto
}

// compileChunk parses and compiles src. Errors are *lua.ApiError with the
// parser's or compiler's error as Cause, as LState.Load returns them.
func compileChunk(src []byte, name string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		return nil, &lua.ApiError{Type: lua.ApiErrorSyntax, Object: lua.LString(err.Error()), Cause: err}
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, &lua.ApiError{Type: lua.ApiErrorSyntax, Object: lua.LString(err.Error()), Cause: err}
	}
	compact(proto)
	return proto, nil
}

// compact copies each slice of p and its nested prototypes to one of its
// own length, dropping the compiler's oversized buffers.
func compact(p *lua.FunctionProto) {
	p.Code = append([]uint32(nil), p.Code...)
	p.DbgSourcePositions = append([]int(nil), p.DbgSourcePositions...)
	p.Constants = append([]lua.LValue(nil), p.Constants...)
	p.DbgLocals = append([]*lua.DbgLocalInfo(nil), p.DbgLocals...)
	p.DbgCalls = append([]lua.DbgCall(nil), p.DbgCalls...)
	p.DbgUpvalues = append([]string(nil), p.DbgUpvalues...)
	p.FunctionPrototypes = append([]*lua.FunctionProto(nil), p.FunctionPrototypes...)
	for _, child := range p.FunctionPrototypes {
		compact(child)
	}
}

// loadFile compiles the file at path (or takes it from the cache) and
// returns it as a function of L. Like LState.LoadFile, a first line that
// starts with '#' is skipped; unlike it, line numbers stay those of the
// file. A VM respawned after a crash loads the source its predecessor
// loaded (spec.code), never a newer file found on disk (SPEC §12); every
// chunk a VM loads is recorded in vm.code, so that a reload can tell
// whether an actor's code changed.
func (vm *VM) loadFile(L *lua.LState, path string) (*lua.LFunction, error) {
	c, ok := vm.spec.code[path]
	if !ok {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, &lua.ApiError{Type: lua.ApiErrorFile, Object: lua.LString(err.Error()), Cause: err}
		}
		if c, err = compiled(path, src); err != nil {
			return nil, err
		}
	}
	vm.codeMu.Lock()
	if vm.code == nil {
		vm.code = map[string]cachedChunk{}
	}
	vm.code[path] = c
	vm.codeMu.Unlock()
	return L.NewFunctionFromProto(c.proto), nil
}

// compiled returns the compiled chunk of path's source src, from the
// process's cache while the file's content is the same.
func compiled(path string, src []byte) (cachedChunk, error) {
	chunkCache.Lock()
	c, ok := chunkCache.m[path]
	chunkCache.Unlock()
	if ok && c.src == string(src) {
		return c, nil
	}
	code := src
	if bytes.HasPrefix(code, []byte("#")) {
		if i := bytes.IndexByte(code, '\n'); i >= 0 {
			code = code[i:]
		} else {
			code = nil
		}
	}
	proto, err := compileChunk(code, path)
	if err != nil {
		return cachedChunk{}, err
	}
	c = cachedChunk{src: string(src), proto: proto}
	chunkCache.Lock()
	chunkCache.m[path] = c
	chunkCache.Unlock()
	return c, nil
}

// Differs says why next, a VM just compiled from the reloaded config and
// the files on disk, must replace vm (SPEC §12): "code" when the script or
// a module it requires changed, "routes" when the routes it owns or the
// push routes other services own did, "settings" when its settings did;
// "" when vm can go on. Limits are not a reason: they change in place.
func (vm *VM) Differs(next *VM) string {
	switch a, b := &vm.spec, &next.spec; {
	case vm.codeChanged(next):
		return "code"
	case !descriptor.SameRoutes(a.Routes, b.Routes) || !maps.Equal(a.PushOwners, b.PushOwners):
		return "routes"
	case !reflect.DeepEqual(a.Settings, b.Settings):
		return "settings"
	}
	return ""
}

// codeChanged reports whether next runs other code than vm. A file next
// loaded counts when vm did not load it with the same content; a file
// only vm loaded (a module it required later, in a handler) counts when
// it changed on disk since.
func (vm *VM) codeChanged(next *VM) bool {
	mine, theirs := vm.sources(), next.sources()
	for path, src := range theirs {
		if old, ok := mine[path]; !ok || old != src {
			return true
		}
	}
	for path, src := range mine {
		if _, ok := theirs[path]; ok {
			continue
		}
		if disk, err := os.ReadFile(path); err != nil || string(disk) != src {
			return true
		}
	}
	return false
}

// sources is a snapshot of the VM's loaded files' contents, by path.
func (vm *VM) sources() map[string]string {
	vm.codeMu.Lock()
	defer vm.codeMu.Unlock()
	out := make(map[string]string, len(vm.code))
	for path, c := range vm.code {
		out[path] = c.src
	}
	return out
}

// builtin is one of the runtime's own chunks, compiled once.
type builtin struct {
	name, src string
	once      sync.Once
	proto     *lua.FunctionProto
}

// function returns the chunk as a function of L. The chunks are constants:
// one that does not compile is a bug, so it panics.
func (b *builtin) function(L *lua.LState) *lua.LFunction {
	b.once.Do(func() {
		p, err := compileChunk([]byte(strings.TrimSpace(b.src)), builtinChunk+b.name)
		if err != nil {
			panic("luavm: built-in chunk " + b.name + ": " + err.Error())
		}
		b.proto = p
	})
	return L.NewFunctionFromProto(b.proto)
}
