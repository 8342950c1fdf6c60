package luavm

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Options sized for many small VMs: gopher-lua's defaults (a 256-frame call
// stack and a 5,120-slot registry allocated up front) cost far more per VM
// than a game service needs; the registry grows on demand instead.
var stateOptions = lua.Options{
	SkipOpenLibs:        true,
	CallStackSize:       200, // also the recursion limit: deeper is "stack overflow"
	RegistrySize:        1024,
	RegistryMaxSize:     1024 * 256,
	RegistryGrowStep:    256,
	MinimizeStackMemory: true,
}

// removedBase are base-library functions a service must not have: they read
// files (dofile, loadfile), bypass the module rules (module, require, which
// is replaced), or dump VM internals (_printregs).
var removedBase = []string{"dofile", "loadfile", "module", "require", "_printregs", "_GOPHER_LUA_VERSION"}

// osAllowed is the part of the os library that only reads the clock.
var osAllowed = []string{"time", "clock", "date", "difftime"}

// newSandbox returns a Lua state holding only the whitelisted libraries of
// SPEC §8: no io, no debug, no os beyond the clock, no loadfile or dofile,
// and a require that loads only modules from dir.
func newSandbox(dir string, log *slog.Logger, load loader) *lua.LState {
	L := lua.NewState(stateOptions)
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
		{lua.OsLibName, lua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range removedBase {
		g.RawSetString(name, lua.LNil)
	}

	fullOS, _ := g.RawGetString("os").(*lua.LTable)
	safeOS := L.NewTable()
	for _, name := range osAllowed {
		safeOS.RawSetString(name, fullOS.RawGetString(name))
	}
	g.RawSetString("os", safeOS)

	// package.loaded is the service's own cache, not the registry's, which
	// holds the unrestricted libraries.
	loaded := L.NewTable()
	for _, name := range []string{"_G", "table", "string", "math", "coroutine", "os"} {
		loaded.RawSetString(name, g.RawGetString(name))
	}
	pkg := L.NewTable()
	pkg.RawSetString("loaded", loaded)
	g.RawSetString("package", pkg)
	g.RawSetString("require", L.NewFunction(requireFrom(dir, loaded, load)))
	g.RawSetString("print", L.NewFunction(printTo(log)))
	return L
}

// loader compiles a file of the service's into a function of L.
type loader func(L *lua.LState, path string) (*lua.LFunction, error)

// moduleName is what require accepts: dotted identifiers, so a name can
// never climb out of the service's folder.
var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// requireFrom returns a require that loads name from dir/name.lua (dots are
// folders) and caches it in loaded. A symlink that leads out of dir is
// refused like a missing file.
func requireFrom(dir string, loaded *lua.LTable, load loader) lua.LGFunction {
	return func(L *lua.LState) int {
		name := L.CheckString(1)
		if v := loaded.RawGetString(name); v != lua.LNil {
			L.Push(v)
			return 1
		}
		if !moduleName.MatchString(name) {
			L.RaiseError("require %q: a module name is dotted identifiers from the service's folder", name)
		}
		path := filepath.Join(dir, strings.ReplaceAll(name, ".", string(filepath.Separator))+".lua")
		if err := inside(dir, path); err != nil {
			L.RaiseError("require %q: %v", name, err)
		}
		fn, err := load(L, path)
		if err != nil {
			L.RaiseError("require %q: %s", name, loadMessage(err, path))
		}
		L.Push(fn)
		L.Push(lua.LString(name))
		L.Call(1, 1)
		v := L.Get(-1)
		if v == lua.LNil {
			v = lua.LTrue
		}
		loaded.RawSetString(name, v)
		L.Push(v)
		return 1
	}
}

// inside checks that path exists and, symlinks followed, lies in dir.
func inside(dir, path string) error {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("no module file %s", path)
		}
		return err
	}
	rel, err := filepath.Rel(realDir, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is outside the service's folder", path)
	}
	return nil
}

// printTo sends print's output to the service's log, so that a stray debug
// print lands next to everything else the service says.
func printTo(log *slog.Logger) lua.LGFunction {
	return func(L *lua.LState) int {
		parts := make([]string, L.GetTop())
		for i := range parts {
			parts[i] = L.ToStringMeta(L.Get(i + 1)).String()
		}
		log.Info(strings.Join(parts, "\t"), "source", "print")
		return 0
	}
}
