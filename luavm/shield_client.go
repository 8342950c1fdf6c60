package luavm

import (
	"errors"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
)

// installClient adds shield.client and shield.client_rpc: the session
// operations and one push helper per s2c or bidi route the service owns.
func (vm *VM) installClient(sh *lua.LTable, check *lua.LFunction) {
	L := vm.l
	client := L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"ref":  vm.luaRef,
		"kick": vm.luaKick,
	})
	client.RawSetString("bind", vm.suspending(check, vm.luaBind))
	sh.RawSetString("client", client)
	// The helpers are filled in by bindRoutes, once the routes are known.
	rpc := L.NewTable()
	meta := L.NewTable()
	meta.RawSetString("__index", L.NewFunction(vm.foreignHelper))
	rpc.Metatable = meta
	sh.RawSetString("client_rpc", rpc)
}

// foreignHelper is shield.client_rpc's __index: the helper of a push
// route that another service owns is not this VM's, and calling it raises
// an error that says where it lives, instead of "attempt to call a nil
// value". Any other missing name is nil.
func (vm *VM) foreignHelper(L *lua.LState) int {
	name := L.CheckString(2)
	owner, ok := vm.spec.PushOwners[name]
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("shield.client_rpc.%s pushes a route of service %q: only its VMs can push it (send %s a message that pushes)",
			name, owner, owner)
		return 0
	}))
	return 1
}

// installHelpers registers shield.client_rpc.<binding> for each push route.
func (vm *VM) installHelpers() {
	rpc := vm.shield.RawGetString("client_rpc").(*lua.LTable)
	for name, r := range vm.helpers {
		rpc.RawSetString(name, vm.l.NewFunction(vm.pushHelper(r)))
	}
}

// maxExactInt is the largest integer a Lua number holds exactly; beyond it
// ids reach Lua as decimal strings (SPEC §8).
const maxExactInt = 1 << 53

func idValue(v uint64) lua.LValue {
	if v > maxExactInt {
		return lua.LString(strconv.FormatUint(v, 10))
	}
	return lua.LNumber(v)
}

func idFrom(v lua.LValue) (uint64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		f := float64(v)
		if f < 0 || f > maxExactInt || f != math.Trunc(f) {
			return 0, false
		}
		return uint64(f), true
	case lua.LString:
		n, err := strconv.ParseUint(string(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// refTable is a ClientRef as Lua sees it (shield.client.ref, a bind's
// result): plain data, a table.
func (vm *VM) refTable(r egress.ClientRef) *lua.LTable {
	t := vm.l.CreateTable(0, 4)
	vm.setRef(t, r)
	return t
}

func (vm *VM) setRef(t *lua.LTable, r egress.ClientRef) {
	t.RawSetString("session_id", idValue(r.SessionID))
	t.RawSetString("epoch", idValue(r.Epoch))
	if r.PlayerID != "" {
		t.RawSetString("player_id", lua.LString(r.PlayerID))
	}
	t.RawSetString("gateway", vm.gatewayLValue(r.Gateway))
}

// refFrom reads a client (ClientContext) or a ClientRef table.
func refFrom(v lua.LValue) (egress.ClientRef, bool) {
	if cv := clientOf(v); cv != nil {
		return cv.ref, true
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		return egress.ClientRef{}, false
	}
	sid, ok1 := idFrom(t.RawGetString("session_id"))
	epoch, ok2 := idFrom(t.RawGetString("epoch"))
	gw, ok3 := t.RawGetString("gateway").(lua.LString)
	if !ok1 || !ok2 || !ok3 {
		return egress.ClientRef{}, false
	}
	r := egress.ClientRef{SessionID: sid, Epoch: epoch, Gateway: string(gw)}
	if p, ok := t.RawGetString("player_id").(lua.LString); ok {
		r.PlayerID = string(p)
	}
	return r, true
}

func checkRef(L *lua.LState, n int) egress.ClientRef {
	r, ok := refFrom(L.Get(n))
	if !ok {
		L.ArgError(n, "a client or ClientRef (session_id, epoch, gateway) is required")
	}
	return r
}

// sinkFor returns where a session operation goes, or raises unavailable.
func (vm *VM) sinkFor(L *lua.LState, name string) egress.Sink {
	sink := vm.sink()
	if sink == nil {
		vm.raise(L, codes.Unavailable, "%s: no gateway is attached", name)
	}
	return sink
}

// shield.client.ref(client) -> ClientRef: plain data to store and pass on.
func (vm *VM) luaRef(L *lua.LState) int {
	L.Push(vm.refTable(checkRef(L, 1)))
	return 1
}

// shield.client.bind(client, player_id, target) -> the new ClientRef.
// The bind is a request to the session's gateway (SPEC §4, §10): only the
// calling coroutine waits for its outcome, like shield.call. The caller
// resolves the target VM, fnv1a64(player_id) % instances.
func (vm *VM) luaBind(L *lua.LState) int {
	t := vm.running(L, "shield.client.bind")
	ref := checkRef(L, 1)
	player := L.CheckString(2)
	service := L.CheckString(3)
	if player == "" {
		L.ArgError(2, "player_id must not be empty")
	}
	sink := vm.sink()
	if sink == nil {
		return vm.fail(L, codes.Unavailable, "shield.client.bind: no gateway is attached")
	}
	target, cerr := vm.host.Pick(service, player)
	if cerr != nil {
		return vm.fail(L, cerr.Code, "%s", cerr.Message)
	}
	id, ok := vm.addPending(&pending{kind: pendBind, task: t, ref: ref})
	if !ok {
		return vm.fail(L, codes.Busy, "max_pending (%d) timers and calls already in flight", vm.spec.MaxPending)
	}
	host, self, gen := vm.host, vm.host.Self(), vm.gen
	func() {
		defer vm.guard("gateway Bind")
		sink.Bind(&egress.BindRequest{Ref: ref, PlayerID: player, Target: target, Caller: self},
			func(nref egress.ClientRef, err *codes.Error) {
				host.Return(&Result{To: self, ID: id, Gen: gen, Ref: nref, Err: err})
			})
	}()
	t.waiting = id
	return L.Yield(vm.wait)
}

// shield.client.kick(client_or_ref, reason) -> true | nil, code.
func (vm *VM) luaKick(L *lua.LState) int {
	ref := checkRef(L, 1)
	reason := L.OptString(2, "kicked")
	sink := vm.sinkFor(L, "shield.client.kick")
	var err *codes.Error
	func() {
		defer vm.guard("gateway Kick")
		err = sink.Kick(ref, reason)
	}()
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Code))
		return 2
	}
	L.Push(lua.LTrue)
	return 1
}

// encodePush encodes a push body once per body codec in use. A codec that
// cannot encode the value (a table for raw) is left out, and the gateway
// refuses that codec's sessions; when no codec can, the helper raises.
func (vm *VM) encodePush(L *lua.LState, r *descriptor.Route, v lua.LValue) map[string][]byte {
	keys := vm.spec.PushCodecs
	if len(keys) == 0 {
		keys = []string{codec.JSONName}
	}
	bodies := make(map[string][]byte, len(keys))
	var first error
	for _, key := range keys {
		b, err := codec.EncodePush(L, r, key, v)
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		bodies[key] = b
	}
	if len(bodies) == 0 {
		if errors.Is(first, codec.ErrTooLarge) {
			vm.raise(L, codes.ResourceExhausted, "%s: %v", "shield.client_rpc."+r.Binding, first)
		}
		L.ArgError(2, first.Error())
	}
	return bodies
}

// pushHelper is shield.client_rpc.<binding>(target, body): target is one
// client or ref (-> true | nil, code) or an array of them (-> accepted
// count, {index = code} for each rejected one). The body is encoded once.
func (vm *VM) pushHelper(r *descriptor.Route) lua.LGFunction {
	name := "shield.client_rpc." + r.Binding
	return func(L *lua.LState) int {
		var target *lua.LTable
		single := clientOf(L.Get(1)) != nil
		if !single {
			target = L.CheckTable(1)
			single = target.RawGetString("session_id") != lua.LNil
		}
		sink := vm.sinkFor(L, name)
		p := &egress.Push{RouteID: r.ID, Bodies: vm.encodePush(L, r, L.Get(2))}
		if single {
			p.Targets = []egress.ClientRef{checkRef(L, 1)}
		} else {
			n := target.Len()
			p.Targets = make([]egress.ClientRef, n)
			for i := 1; i <= n; i++ {
				ref, ok := refFrom(target.RawGetInt(i))
				if !ok {
					L.ArgError(1, "element "+strconv.Itoa(i)+" is not a client or ClientRef")
				}
				p.Targets[i-1] = ref
			}
		}
		var rejected []codes.Code
		func() {
			defer vm.guard("gateway Push")
			rejected = sink.Push(p)
		}()
		if single {
			if len(rejected) > 0 && rejected[0] != "" {
				L.Push(lua.LNil)
				L.Push(lua.LString(rejected[0]))
				return 2
			}
			L.Push(lua.LTrue)
			return 1
		}
		bad := L.NewTable()
		accepted := len(p.Targets)
		for i, code := range rejected {
			if code != "" {
				accepted--
				bad.RawSetInt(i+1, lua.LString(code))
			}
		}
		L.Push(lua.LNumber(accepted))
		L.Push(bad)
		return 2
	}
}
