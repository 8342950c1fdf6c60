package luavm

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// The Lua author's references, relative to this package's folder (go test
// runs in it).
const (
	annotStubFile = "../lua/types/shield.lua"
	annotDocFile  = "../docs/lua-api.md"
)

// annotShield is what a VM's shield table holds, as dotted paths below
// "shield": the functions, and the other values (tables and shield.null).
type annotShield struct {
	funcs  map[string]bool
	values map[string]bool
}

// TestAnnotations keeps lua/types/shield.lua and docs/lua-api.md in step
// with the shield table a VM really registers: every function needs an
// annotated stub and a mention in the guide, and every stub must name a
// function that exists.
func TestAnnotations(t *testing.T) {
	annotNoLeak(t)
	got := annotSpawnShield(t)

	stub, err := os.ReadFile(annotStubFile)
	if err != nil {
		t.Fatalf("the LuaLS definition file: %v", err)
	}
	// A stub that is not Lua would load in no editor.
	if _, err := parse.Parse(bytes.NewReader(stub), annotStubFile); err != nil {
		t.Fatalf("%s does not parse as Lua: %v", annotStubFile, err)
	}
	defs := annotParseStubs(string(stub))

	t.Run("stubs", func(t *testing.T) {
		for _, path := range annotSorted(got.funcs) {
			d, ok := defs.funcs[path]
			if !ok {
				t.Errorf("shield.%s is registered in the VM but %s has no `function shield.%s(` stub", path, annotStubFile, path)
				continue
			}
			for _, problem := range d.problems() {
				t.Errorf("%s:%d: shield.%s: %s", annotStubFile, d.line, path, problem)
			}
		}
		for _, path := range annotSorted(defs.funcs) {
			if !got.funcs[path] {
				t.Errorf("%s:%d: shield.%s is documented but the VM registers no such function", annotStubFile, defs.funcs[path].line, path)
			}
		}
		for _, path := range annotSorted(got.values) {
			if _, ok := defs.values[path]; !ok {
				t.Errorf("shield.%s exists in the VM but %s does not declare it (`shield.%s = ...` with a ---@type or ---@class)", path, annotStubFile, path)
			}
		}
		for _, path := range annotSorted(defs.values) {
			if !got.values[path] {
				t.Errorf("%s:%d: shield.%s is declared but the VM has no such value", annotStubFile, defs.values[path], path)
			}
		}
	})

	t.Run("guide", func(t *testing.T) {
		doc, err := os.ReadFile(annotDocFile)
		if err != nil {
			t.Fatalf("the guide: %v", err)
		}
		names := append(annotSorted(got.funcs), annotSorted(got.values)...)
		for _, path := range names {
			re := regexp.MustCompile(`shield\.` + regexp.QuoteMeta(path) + `\b`)
			if !re.Match(doc) {
				t.Errorf("%s never mentions shield.%s", annotDocFile, path)
			}
		}
	})
}

// annotSpawnShield spawns a VM of a tiny service that owns one s2c route, so
// that shield.client_rpc has a helper, and walks its shield table.
func annotSpawnShield(t testing.TB) annotShield {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "svc.lua")
	if err := os.WriteFile(script, []byte("local M = {}\nfunction M.hello(ctx, client, req) return req end\nreturn M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vm, err := New(Spec{
		Service: "svc",
		Script:  script,
		Routes: []descriptor.Route{
			{ID: 1, Name: "hello", Binding: "hello", Direction: config.C2S, Owner: "svc", Action: config.DecodeLocal},
			{ID: 2, Name: "news", Binding: "news", Direction: config.S2C, Owner: "svc", Action: config.DecodeLocal},
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("spawn: %v", err)
	}
	t.Cleanup(vm.Close)

	sh, ok := vm.l.GetGlobal("shield").(*lua.LTable)
	if !ok {
		t.Fatal("the VM has no global table `shield`")
	}
	if loaded := vm.l.G.Global.RawGetString("package").(*lua.LTable).RawGetString("loaded").(*lua.LTable); loaded.RawGetString("shield") != sh {
		t.Error(`require("shield") is not the shield global`)
	}
	got := annotShield{funcs: map[string]bool{}, values: map[string]bool{}}
	annotWalk(t, sh, "", got, 0)

	// The per-route helpers are the service's, not the API's: the stub
	// types them as a table of functions. Check only that the route's
	// helper is there, so the skip below cannot hide a broken install.
	rpc, _ := sh.RawGetString("client_rpc").(*lua.LTable)
	if rpc == nil {
		t.Fatal("shield.client_rpc is missing")
	}
	if _, ok := rpc.RawGetString("news").(*lua.LFunction); !ok {
		t.Error("shield.client_rpc.news (the s2c route's helper) is missing")
	}
	return got
}

// annotWalk records every function and value under t as a dotted path. It
// does not descend into client_rpc, whose keys are route bindings.
func annotWalk(t testing.TB, tbl *lua.LTable, prefix string, got annotShield, depth int) {
	t.Helper()
	if depth > 4 {
		t.Fatalf("shield.%s: nested deeper than expected (a cycle?)", prefix)
	}
	tbl.ForEach(func(k, v lua.LValue) {
		name, ok := k.(lua.LString)
		if !ok {
			t.Errorf("shield.%s has a non-string key %v", prefix, k)
			return
		}
		path := string(name)
		if prefix != "" {
			path = prefix + "." + path
		}
		switch v := v.(type) {
		case *lua.LFunction:
			got.funcs[path] = true
		case *lua.LTable:
			got.values[path] = true
			if path != "client_rpc" {
				annotWalk(t, v, path, got, depth+1)
			}
		default:
			// shield.null (codec.Null), or any other non-function value:
			// the stub must declare it, as it declares the tables.
			got.values[path] = true
		}
	})
}

// annotStubs is what lua/types/shield.lua defines.
type annotStubs struct {
	funcs  map[string]annotDef
	values map[string]int // path -> line of `shield.<path> = ...`
}

// annotDef is one `function shield.<path>(params)` with the ---
// annotation block right above it.
type annotDef struct {
	line   int
	params []string
	doc    []string // the --- lines, without the dashes
}

var (
	annotFuncDef  = regexp.MustCompile(`^function\s+shield\.([A-Za-z_][\w.]*)\s*\(([^)]*)\)`)
	annotFuncAsgn = regexp.MustCompile(`^shield\.([A-Za-z_][\w.]*)\s*=\s*function\s*\(([^)]*)\)`)
	annotValue    = regexp.MustCompile(`^shield\.([A-Za-z_][\w.]*)\s*=`)
	annotParamTag = regexp.MustCompile(`^@param\s+(\.\.\.|[A-Za-z_]\w*)`)
)

// annotParseStubs reads the stub file line by line: each function
// definition takes the run of --- lines right above it as its annotations (a
// blank line ends a run, as it does for LuaLS), and any other
// `shield.<path> =` line declares a value.
func annotParseStubs(src string) annotStubs {
	out := annotStubs{funcs: map[string]annotDef{}, values: map[string]int{}}
	var block []string // the --- lines just above the current line
	sc := bufio.NewScanner(strings.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if doc, ok := strings.CutPrefix(line, "---"); ok {
			block = append(block, strings.TrimSpace(doc))
			continue
		}
		m := annotFuncDef.FindStringSubmatch(line)
		if m == nil {
			m = annotFuncAsgn.FindStringSubmatch(line)
		}
		switch {
		case m != nil:
			d := annotDef{line: n, doc: block}
			for _, p := range strings.Split(m[2], ",") {
				if p = strings.TrimSpace(p); p != "" {
					d.params = append(d.params, p)
				}
			}
			out.funcs[m[1]] = d
		case annotValue.MatchString(line):
			out.values[annotValue.FindStringSubmatch(line)[1]] = n
		}
		block = nil
	}
	return out
}

// problems lists what the annotation block of a stub lacks: a one-line
// description, and a ---@param for each parameter.
func (d annotDef) problems() []string {
	var out []string
	described := false
	documented := map[string]bool{}
	for _, l := range d.doc {
		if l != "" && !strings.HasPrefix(l, "@") {
			described = true
		}
		if m := annotParamTag.FindStringSubmatch(l); m != nil {
			documented[m[1]] = true
		}
	}
	if !described {
		out = append(out, "no description line (--- text) above the stub")
	}
	for _, p := range d.params {
		if !documented[p] {
			out = append(out, "parameter "+p+" has no ---@param")
		}
	}
	return out
}

// annotSorted returns the keys of m in order, for stable failure messages.
func annotSorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// annotNoLeak fails the test if it leaves goroutines behind, polling with
// a deadline because a stopped timer's goroutine may take a moment to go.
func annotNoLeak(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
}
