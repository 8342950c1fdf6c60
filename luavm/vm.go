// Package luavm embeds gopher-lua for Shield's game services: a sandboxed
// Lua state per VM, the service script loaded as a module table, and the
// compile of the routes the service owns into Lua functions (validation
// layer 3 of SPEC §2).
//
// A VM is not safe for concurrent use: exactly one goroutine, its actor's,
// touches it.
package luavm

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/tracing"
)

// DefaultLoadTimeout bounds a script's top-level code: a script that loops
// forever at load fails the start instead of hanging it.
const DefaultLoadTimeout = 5 * time.Second

// generations numbers the VMs of the process, see Call.Gen.
var generations atomic.Uint64

// Spec is everything needed to spawn one VM of a service. A field the
// config gives a default to takes that default (package config's) when
// left zero.
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
	// Settings is the actor's settings mapping (shield.settings), plain
	// data; nil: none.
	Settings map[string]any
	// PushOwners maps the helper name of every push route that another
	// service owns to that service, so that calling it here can say
	// where it lives.
	PushOwners map[string]string
	// HTTP is shield.http's client, shared by every VM of the runtime;
	// nil: every URL is refused, as with an empty lua.http.allow.
	HTTP *HTTPClient
	// KV is the store of shield.kv, shared by every VM of the runtime;
	// nil without storage: every shield.kv function raises unavailable.
	KV KV
	// Suppressed, if set, counts an incident whose log line the VM's
	// limit dropped (its incident id still reaches the client).
	Suppressed func()
	// Tracer records the VM's spans (docs/tracing.md); nil: tracing off.
	Tracer *tracing.Tracer
	// Room makes the VM a room kind's (docs/rooms.md): its compile at
	// start, or one room's VM when Room.ID is set. nil: an ordinary VM.
	Room *RoomSpec
	// RoomRoutes are the reserved routes of a config with rooms
	// (descriptor.RouteRoomJoin, ...): every VM serves join, room VMs
	// leave and sync. Empty without rooms.
	RoomRoutes []descriptor.Route

	// code is the source a respawned VM loads instead of the files on
	// disk: its predecessor's (see VM.Respawn).
	code map[string]cachedChunk
}

// VM is one sandboxed Lua state running a service script. Only its
// actor's goroutine touches it; its fields are the runtime's own.
type VM struct {
	l        *lua.LState
	service  string
	instance int
	module   *lua.LTable
	log      *slog.Logger

	spec Spec
	// tr is spec.Tracer, nil when tracing is off; the two attributes
	// every span of the VM carries are made once.
	tr                          *tracing.Tracer
	traceService, traceInstance tracing.Attr
	handlers                    map[uint32]*handler          // c2s and bidi routes: route_id -> binding
	helpers                     map[string]*descriptor.Route // s2c and bidi routes: binding -> route
	bindings                    map[string]bool              // every c2s/bidi binding: not callable as a method

	// hooks are the module's optional hook functions, by name (see
	// hookNames); a hook the module does not define is absent.
	hooks map[string]*lua.LFunction

	// The runtime. Only the actor's goroutine touches any of it.
	host   Host
	intr   *interrupt
	shield *lua.LTable // the shield module
	ctx    *lua.LTable // every run's ctx, see installCtx
	// clientMeta is the metatable of every client userdata (client.go).
	clientMeta *lua.LTable

	// Values converted once: a string or number stored in a table is
	// boxed, an allocation each time.
	ctxService, ctxInstance lua.LValue
	gatewayName             string
	gatewayValue            lua.LValue     // gatewayName, boxed
	lastLine                int64          // the last ctx.deadline, unix ms
	lastLineValue           lua.LValue     // lastLine, boxed
	errMeta                 *lua.LTable    // metatable of shield error tables: marks them trusted
	wait                    *lua.LUserData // yielded by shield functions that suspend
	callGo                  *lua.LFunction // the prelude's trampoline for a Go function's task
	pool                    []*lua.LState  // finished message coroutines, for ResumePooled
	tasks                   map[uint64]*task
	suspendedCo             map[*lua.LState]*task // the coroutines suspended tasks wait in (task.chain), which coroutine.resume refuses
	pending                 map[uint64]*pending
	timers                  timerHeap
	stale                   staleSessions // sessions closed or rebound away from this VM, see stale.go
	incidents               incidentLimiter
	gen                     uint64 // this VM's generation, see Call.Gen
	nextID                  uint64
	current                 *task        // the task being resumed, if any
	args                    []lua.LValue // scratch for start (a Go function's task)
	rets                    []lua.LValue // scratch for a run's results (resumeTask)
	freeTasks               []*task      // finished tasks for reuse (recycle)
	raised                  bool         // the last error came through panicHook
	trace                   string       // its traceback
	crashed                 bool
	// crashError is what the run that crashed answers, set with crashed
	// by guard.
	crashError *codes.Error
	nesting    int // coroutines resumed inside the task's, see maxNesting

	// room is a room VM's own state (room.go); nil for every other VM.
	room *room
	// joinRoute is the shield.room.join route's handler (shield_room.go).
	joinRoute *lua.LFunction

	// code is every chunk the VM loaded, by path (see loadFile). A reload
	// reads it from another goroutine while a handler may require a
	// module.
	codeMu sync.Mutex // guards code
	code   map[string]cachedChunk

	// The VM's op goroutines (ops.go): opCtx ends when the VM closes, and
	// ops counts those still running. Only the actor's goroutine starts
	// one or waits for them.
	opCtx  context.Context
	opStop context.CancelFunc
	ops    sync.WaitGroup
}

// handler is a compiled c2s or bidi route.
type handler struct {
	fn    *lua.LFunction
	route *descriptor.Route
	name  lua.LValue // route.Name and route.ID, boxed for client tables
	id    lua.LValue
	// lazy: the route's lazy_decode is on and fn takes no req (see
	// takesReq), so a decode nothing else observes is skipped.
	lazy bool
	// builtin: a reserved room route (docs/rooms.md §8.1) the runtime
	// serves; its body is JSON whatever the listener's codec.
	builtin bool
}

// takesReq reports whether a handler function can read its third
// argument, req: a Lua function declared with fewer than three parameters
// and no ... cannot (its extra arguments are dropped by the call), so its
// request need not be decoded. A Go function might read anything.
func takesReq(fn *lua.LFunction) bool {
	return fn.IsG || fn.Proto == nil || fn.Proto.NumParameters >= 3 || fn.Proto.IsVarArg != 0
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
	// The config's defaults, for a spec (a test's) that leaves them out.
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
	vm := &VM{service: spec.Service, instance: spec.Instance, log: log, spec: spec, gen: generations.Add(1),
		intr: newInterrupt(), tasks: map[uint64]*task{}, suspendedCo: map[*lua.LState]*task{}, pending: map[uint64]*pending{}}
	vm.l = newSandbox(filepath.Dir(spec.Script), log, vm.loadFile)
	if spec.Tracer != nil {
		vm.tr = spec.Tracer
		vm.traceService, vm.traceInstance = tracing.String("shield.service", spec.Service), tracing.Int("shield.instance", spec.Instance)
	}
	vm.opCtx, vm.opStop = context.WithCancel(context.Background())
	if err := vm.setup(); err != nil {
		vm.Close()
		return nil, fmt.Errorf("luavm: runtime setup: %w", err)
	}
	if err := vm.load(spec); err != nil {
		vm.Close()
		return nil, err
	}
	if spec.Room != nil {
		if err := vm.checkRoomModule(spec); err != nil {
			vm.Close()
			return nil, err
		}
		if spec.Room.ID != "" {
			vm.installRoom(spec.Room)
			vm.log = vm.log.With("room", spec.Room.ID)
		}
	}
	if err := vm.bindRoutes(spec); err != nil {
		vm.Close()
		return nil, err
	}
	return vm, nil
}

// setup installs the runtime: the interrupt, coroutine-aware pcall, the
// bounded string library and the shield module. It runs before the script
// so that the script's top level can already use shield.
func (vm *VM) setup() error {
	L := vm.l
	vm.boundConcat()
	vm.wait = L.NewUserData()
	vm.installCoroutines()
	if err := vm.compilePrelude(); err != nil {
		return err
	}
	vm.installStrings()
	vm.installBounded()
	vm.installShield()
	vm.installCtx()
	vm.installClientMeta()
	vm.installIteration()
	return nil
}

// Service is the name of the VM's service.
func (vm *VM) Service() string { return vm.service }

// Instance is the VM's instance index in its service, 0-based.
func (vm *VM) Instance() int { return vm.instance }

// Attach gives the VM the actor that runs it. Handlers run only after it.
func (vm *VM) Attach(h Host) { vm.host = h }

// Close ends the VM's ops (their requests are cancelled, and Close waits
// for their goroutines), then releases the Lua state.
func (vm *VM) Close() {
	vm.closeOps()
	vm.intr.stop()
	vm.l.Close()
}

// Respawn replaces a crashed VM (SPEC §6): every task still in it answers
// with the crash's incident, its Lua state is closed, and a fresh VM is
// loaded from the same spec and the same source (never newer files on
// disk, SPEC §12) and attached to the same host. The new VM has
// not run init yet: the caller runs it (RunHook) before it takes messages.
// The one VM replacement path; on error the old VM is closed all the same.
func (vm *VM) Respawn() (*VM, error) {
	func() {
		defer func() { _ = recover() }() // the old VM may be too broken to abort cleanly
		vm.Abort(vm.crashErr())
	}()
	vm.Close()
	spec := vm.spec
	vm.codeMu.Lock()
	spec.code = maps.Clone(vm.code) // the code this VM ran, not newer files on disk
	vm.codeMu.Unlock()
	next, err := New(spec)
	if err != nil {
		return nil, err
	}
	next.Attach(vm.host)
	return next, nil
}

// HasHandler reports whether the route is compiled into a handler here.
func (vm *VM) HasHandler(routeID uint32) bool { return vm.handlers[routeID] != nil }

// Helper returns the s2c or bidi route behind shield.client_rpc.<name>, or nil.
func (vm *VM) Helper(name string) *descriptor.Route { return vm.helpers[name] }

// HasHook reports whether the module defines the named hook.
func (vm *VM) HasHook(name string) bool { return vm.hooks[name] != nil }

func (vm *VM) load(spec Spec) error {
	fail := func(line int, format string, args ...any) error {
		return config.Errors{{File: spec.Script, Line: line, Actor: spec.Service, Msg: fmt.Sprintf(format, args...)}}
	}
	fn, err := vm.loadFile(vm.l, spec.Script)
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
	vm.l.SetContext(vm.intr)
	vm.intr.arm(time.Now().Add(budget))
	vm.l.Push(fn)
	err = vm.l.PCall(0, 1, nil)
	reason := vm.intr.disarm()
	vm.l.RemoveContext()
	if reason != notInterrupted {
		if err == nil {
			vm.l.Pop(1)
		}
		return fail(0, "script did not finish loading within %v (an endless loop at the top level?)", budget)
	}
	if err != nil {
		return fail(0, "script raised while loading: %s", loadMessage(err, spec.Script))
	}
	ret := vm.l.Get(-1)
	vm.l.Pop(1)
	mod, ok := ret.(*lua.LTable)
	if !ok {
		return fail(0, "script must return its module table, got %s", ret.Type())
	}
	vm.module = mod
	vm.hooks = map[string]*lua.LFunction{}
	for _, name := range hookNames {
		if fn, ok := mod.RawGetString(name).(*lua.LFunction); ok {
			vm.hooks[name] = fn
		}
	}
	return nil
}

// hookNames are the module functions the runtime runs itself (SPEC §8);
// no client and no other service may call them.
var hookNames = []string{"init", "stop", "draining", "client_bound", "client_disconnected",
	"client_suspended", "client_resumed", "reload_save", "reload_load"}

// isHook reports whether name is one of hookNames.
func isHook(name string) bool { return slices.Contains(hookNames, name) }

// bindRoutes binds every route the service owns (layer 3): a c2s or bidi
// route's binding must be a function of the module, and an s2c or bidi
// route's binding becomes a push helper name.
func (vm *VM) bindRoutes(spec Spec) error {
	vm.handlers = make(map[uint32]*handler)
	vm.helpers = make(map[string]*descriptor.Route)
	vm.bindings = make(map[string]bool)
	var errs config.Errors
	for i := range spec.Routes {
		r := &spec.Routes[i]
		if r.Owner != spec.Service {
			continue // another service's route: this VM never compiles it
		}
		if r.RoomInput && spec.Room != nil {
			// Queued for room_tick (docs/rooms.md §6): no handler.
			vm.handlers[r.ID] = &handler{route: r, name: lua.LString(r.Name), id: lua.LNumber(r.ID)}
			continue
		}
		if r.Direction.FromClient() {
			v := vm.module.RawGetString(r.Binding)
			fn, ok := v.(*lua.LFunction)
			if !ok {
				errs = append(errs, &config.Error{File: r.File, Line: r.Line, Actor: spec.Service, Route: r.Label(),
					Msg: fmt.Sprintf("client_rpc.handler_missing: binding %q is not a function of the module in %s (it is %s)",
						r.Binding, spec.Script, v.Type())})
				continue
			}
			vm.handlers[r.ID] = &handler{fn: fn, route: r, name: lua.LString(r.Name), id: lua.LNumber(r.ID),
				lazy: r.LazyDecode && !takesReq(fn)}
			vm.bindings[r.Binding] = true
		}
		if r.Direction.ToClient() {
			vm.helpers[r.Binding] = r
		}
	}
	for i := range spec.RoomRoutes {
		r := &spec.RoomRoutes[i]
		if r.Direction.FromClient() {
			vm.handlers[r.ID] = &handler{route: r, name: lua.LString(r.Name), id: lua.LNumber(r.ID), builtin: true}
		}
	}
	vm.installHelpers()
	return errs.Err()
}
