// Package luavm embeds gopher-lua for Shield's game services: a sandboxed
// Lua state per VM, the service script loaded as a module table, and the
// compile of the routes the service owns into Lua functions (validation
// layer 3 of SPEC §2).
//
// A VM is not safe for concurrent use: exactly one goroutine, its actor's,
// touches it.
package luavm

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// DefaultLoadTimeout bounds a script's top-level code: a script that loops
// forever at load fails the start instead of hanging it.
const DefaultLoadTimeout = 5 * time.Second

// generations numbers the VMs of the process, see Call.Gen.
var generations atomic.Uint64

// Spec is everything needed to spawn one VM of a service.
type Spec struct {
	Service        string
	Instance       int // 0-based
	Script         string
	ConfigFile     string             // for messages about routes
	ScriptLine     int                // the line of the actor's script key
	Routes         []descriptor.Route // the routes whose owner is Service
	MaxStringBytes int64
	LoadTimeout    time.Duration // 0: DefaultLoadTimeout
	HandlerTimeout time.Duration // a handler run's budget; 0: config.DefaultHandlerTimeout
	MaxPending     int           // timers and calls in flight; 0: config.DefaultMaxPending
	Logger         *slog.Logger  // nil: slog.Default()
	// Schemas validates json requests before the handler runs; nil: none.
	Schemas *codec.Schemas
	// PushCodecs are the body codec keys of every listener: a push is
	// encoded once for each. Empty: json only.
	PushCodecs []string
}

// VM is one sandboxed Lua state running a service script.
type VM struct {
	L        *lua.LState
	Service  string
	Instance int
	Module   *lua.LTable
	Log      *slog.Logger

	spec     Spec
	handlers map[uint32]handler           // c2s and bidi routes: route_id -> binding
	helpers  map[string]*descriptor.Route // s2c and bidi routes: binding -> route

	// The module's optional hooks; nil when the module does not define them.
	Init, Stop, ClientDisconnected *lua.LFunction

	// The runtime. Only the actor's goroutine touches any of it.
	host   Host
	intr   *interrupt
	shield *lua.LTable // the shield module
	ctx    *lua.LTable // every run's ctx, see installCtx

	// Values converted once: a string or number stored in a table is
	// boxed, an allocation each time.
	ctxService, ctxInstance lua.LValue
	gatewayName             string
	gatewayValue            lua.LValue     // gatewayName, boxed
	lastLine                int64          // the last ctx.deadline, unix ms
	lastLineValue           lua.LValue     // lastLine, boxed
	errMeta                 *lua.LTable    // metatable of shield error tables: marks them trusted
	done                    *lua.LUserData // yielded by the task loop when a handler returns
	wait                    *lua.LUserData // yielded by shield functions that suspend
	noop                    *lua.LFunction
	body                    *lua.LFunction // the pooled coroutines' loop
	pool                    []*lua.LState
	tasks                   map[uint64]*task
	pending                 map[uint64]*pending
	timers                  timerHeap
	gen                     uint64 // this VM's generation, see Call.Gen
	nextID                  uint64
	current                 *task        // the task being resumed, if any
	args                    []lua.LValue // scratch for start
	raised                  bool         // the last error came through panicHook
	trace                   string       // its traceback
	crashed                 bool
	// crashError is what the run that crashed answers, set with crashed
	// by guard.
	crashError *codes.Error
	nesting    int // coroutines resumed inside the task's, see maxNesting
}

// handler is a compiled c2s or bidi route.
type handler struct {
	fn    *lua.LFunction
	route *descriptor.Route
	name  lua.LValue // route.Name and route.ID, boxed for client tables
	id    lua.LValue
}

// New spawns a VM: it builds the sandbox, runs the script under the load
// budget, checks that it returned a module table, and compiles spec.Routes.
// Every binding problem is reported, not only the first; the error is then a
// config.Errors. New never leaves a goroutine behind.
func New(spec Spec) (*VM, error) {
	log := spec.Logger
	if log == nil {
		log = slog.Default()
	}
	if spec.HandlerTimeout <= 0 {
		spec.HandlerTimeout = config.DefaultHandlerTimeout
	}
	if spec.MaxPending <= 0 {
		spec.MaxPending = config.DefaultMaxPending
	}
	if spec.MaxStringBytes <= 0 {
		spec.MaxStringBytes = config.DefaultMaxStringBytes
	}
	log = log.With("service", spec.Service, "instance", spec.Instance)
	L := newSandbox(filepath.Dir(spec.Script), log)
	vm := &VM{L: L, Service: spec.Service, Instance: spec.Instance, Log: log, spec: spec, gen: generations.Add(1),
		intr: newInterrupt(), tasks: map[uint64]*task{}, pending: map[uint64]*pending{}}
	if err := vm.setup(); err != nil {
		vm.Close()
		return nil, fmt.Errorf("luavm: runtime setup: %w", err)
	}
	if err := vm.load(spec); err != nil {
		vm.Close()
		return nil, err
	}
	if err := vm.compile(spec); err != nil {
		vm.Close()
		return nil, err
	}
	return vm, nil
}

// setup installs the runtime: the interrupt, coroutine-aware pcall, the
// bounded string library and the shield module. It runs before the script
// so that the script's top level can already use shield.
func (vm *VM) setup() error {
	L := vm.L
	vm.done, vm.wait = L.NewUserData(), L.NewUserData()
	vm.noop = L.NewFunction(func(*lua.LState) int { return 0 })
	vm.installCoroutines()
	if err := vm.compilePrelude(); err != nil {
		return err
	}
	vm.installStrings()
	vm.installBounded()
	vm.installShield()
	vm.installCtx()
	return nil
}

// Spec returns what the VM was spawned from, so that a crashed VM can be
// replaced by a fresh one.
func (vm *VM) Spec() Spec { return vm.spec }

// Attach gives the VM the actor that runs it. Handlers run only after it.
func (vm *VM) Attach(h Host) { vm.host = h }

// Close releases the Lua state.
func (vm *VM) Close() {
	vm.intr.stop()
	vm.L.Close()
}

// Handler returns the compiled function of a c2s or bidi route, or nil.
func (vm *VM) Handler(routeID uint32) *lua.LFunction { return vm.handlers[routeID].fn }

// Helper returns the s2c or bidi route behind shield.client_rpc.<name>, or nil.
func (vm *VM) Helper(name string) *descriptor.Route { return vm.helpers[name] }

// Helpers returns the helper names with their routes.
func (vm *VM) Helpers() map[string]*descriptor.Route { return vm.helpers }

func (vm *VM) load(spec Spec) error {
	fail := func(line int, format string, args ...any) error {
		return config.Errors{{File: spec.Script, Line: line, Actor: spec.Service, Msg: fmt.Sprintf(format, args...)}}
	}
	fn, err := loadFile(vm.L, spec.Script)
	if err != nil {
		return config.Errors{{File: spec.ConfigFile, Line: spec.ScriptLine, Actor: spec.Service, Msg: "script: " + loadMessage(err, spec.Script)}}
	}
	budget := spec.LoadTimeout
	if budget <= 0 {
		budget = DefaultLoadTimeout
	}
	// The load runs under the VM's interrupt, as handlers do, and not
	// under a context of its own: every coroutine shares the interrupt
	// (see installCoroutines), so a context on the main thread alone would
	// not stop a loop inside pcall or a coroutine at the top level.
	vm.L.SetContext(vm.intr)
	vm.intr.arm(time.Now().Add(budget))
	vm.L.Push(fn)
	err = vm.L.PCall(0, 1, nil)
	reason := vm.intr.disarm()
	vm.L.RemoveContext()
	if reason != notInterrupted {
		if err == nil {
			vm.L.Pop(1)
		}
		return fail(0, "script did not finish loading within %v (an endless loop at the top level?)", budget)
	}
	if err != nil {
		return fail(0, "script raised while loading: %s", loadMessage(err, spec.Script))
	}
	ret := vm.L.Get(-1)
	vm.L.Pop(1)
	mod, ok := ret.(*lua.LTable)
	if !ok {
		return fail(0, "script must return its module table, got %s", ret.Type())
	}
	vm.Module = mod
	vm.Init = hook(mod, "init")
	vm.Stop = hook(mod, "stop")
	vm.ClientDisconnected = hook(mod, "client_disconnected")
	return nil
}

func hook(mod *lua.LTable, name string) *lua.LFunction {
	fn, _ := mod.RawGetString(name).(*lua.LFunction)
	return fn
}

// compile binds every route the service owns (layer 3): a c2s or bidi
// route's binding must be a function of the module, and an s2c or bidi
// route's binding becomes a push helper name.
func (vm *VM) compile(spec Spec) error {
	vm.handlers = make(map[uint32]handler)
	vm.helpers = make(map[string]*descriptor.Route)
	var errs config.Errors
	for i := range spec.Routes {
		r := &spec.Routes[i]
		if r.Owner != spec.Service {
			continue // another service's route: this VM never compiles it
		}
		if r.Direction.FromClient() {
			v := vm.Module.RawGetString(r.Binding)
			fn, ok := v.(*lua.LFunction)
			if !ok {
				errs = append(errs, &config.Error{File: r.File, Line: r.Line, Actor: spec.Service, Route: r.Label(),
					Msg: fmt.Sprintf("client_rpc.handler_missing: binding %q is not a function of the module in %s (it is %s)",
						r.Binding, spec.Script, v.Type())})
				continue
			}
			vm.handlers[r.ID] = handler{fn: fn, route: r, name: lua.LString(r.Name), id: lua.LNumber(r.ID)}
		}
		if r.Direction.ToClient() {
			vm.helpers[r.Binding] = r
		}
	}
	vm.installHelpers()
	return errs.Err()
}
