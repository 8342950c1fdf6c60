package luavm

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// installClient adds shield.client and shield.client_rpc: the session
// operations and one push helper per s2c or bidi route the service owns.
func (vm *VM) installClient(sh *lua.LTable) {
	L := vm.L
	sh.RawSetString("client", L.SetFuncs(L.NewTable(), map[string]lua.LGFunction{
		"ref":  vm.luaRef,
		"bind": vm.luaBind,
		"kick": vm.luaKick,
	}))
	// The helpers are filled in by compile, once the routes are known.
	sh.RawSetString("client_rpc", L.NewTable())
}

// installHelpers registers shield.client_rpc.<binding> for each push route.
func (vm *VM) installHelpers() {
	rpc := vm.shield.RawGetString("client_rpc").(*lua.LTable)
	for name, r := range vm.helpers {
		rpc.RawSetString(name, vm.L.NewFunction(vm.pushHelper(r)))
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

// clientTable is the handler's `client` argument. The route's name and id
// are the compiled route's, boxed once, when the frame says the same.
func (vm *VM) clientTable(c *ingress.ClientContext, h handler) *lua.LTable {
	t := vm.L.CreateTable(0, 8)
	vm.setRef(t, c.Ref)
	if c.Route == h.route.Name {
		t.RawSetString("route", h.name)
	} else {
		t.RawSetString("route", lua.LString(c.Route))
	}
	t.RawSetString("route_id", h.id)
	t.RawSetString("request_id", idValue(c.RequestID))
	t.RawSetString("remote_addr", lua.LString(c.RemoteAddr))
	return t
}

func (vm *VM) refTable(r egress.ClientRef) *lua.LTable {
	t := vm.L.CreateTable(0, 4)
	vm.setRef(t, r)
	return t
}

func (vm *VM) setRef(t *lua.LTable, r egress.ClientRef) {
	t.RawSetString("session_id", idValue(r.SessionID))
	t.RawSetString("epoch", idValue(r.Epoch))
	if r.PlayerID != "" {
		t.RawSetString("player_id", lua.LString(r.PlayerID))
	}
	if r.Gateway != vm.gatewayName || vm.gatewayValue == nil {
		vm.gatewayName, vm.gatewayValue = r.Gateway, lua.LString(r.Gateway)
	}
	t.RawSetString("gateway", vm.gatewayValue)
}

// refFrom reads a ClientContext or ClientRef table.
func refFrom(v lua.LValue) (egress.ClientRef, bool) {
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

func (vm *VM) gateway(L *lua.LState, name string) egress.Gateway {
	if vm.host == nil || vm.host.Gateway() == nil {
		vm.raise(L, codes.Unavailable, "%s: no gateway is attached", name)
	}
	return vm.host.Gateway()
}

// shield.client.ref(client) -> ClientRef: plain data to store and pass on.
func (vm *VM) luaRef(L *lua.LState) int {
	L.Push(vm.refTable(checkRef(L, 1)))
	return 1
}

// shield.client.bind(client, player_id, target) -> the new ClientRef.
func (vm *VM) luaBind(L *lua.LState) int {
	ref := checkRef(L, 1)
	player := L.CheckString(2)
	target := L.CheckString(3)
	if player == "" {
		L.ArgError(2, "player_id must not be empty")
	}
	gw := vm.gateway(L, "shield.client.bind")
	var nref egress.ClientRef
	var err error
	func() {
		defer vm.guard("gateway Bind")
		nref, err = gw.Bind(&egress.BindRequest{Ref: ref, PlayerID: player, Target: target, Caller: vm.host.Self()})
	}()
	if err != nil {
		vm.raiseErr(L, err)
	}
	L.Push(vm.refTable(nref))
	return 1
}

// shield.client.kick(client_or_ref, reason) -> true | nil, code.
func (vm *VM) luaKick(L *lua.LState) int {
	ref := checkRef(L, 1)
	reason := L.OptString(2, "kicked")
	gw := vm.gateway(L, "shield.client.kick")
	var err error
	func() {
		defer vm.guard("gateway Kick")
		err = gw.Kick(ref, reason)
	}()
	if err != nil {
		code, _ := codes.CodeOf(err)
		L.Push(lua.LNil)
		L.Push(lua.LString(code))
		return 2
	}
	L.Push(lua.LTrue)
	return 1
}

// raiseErr raises a gateway error with its code (handler_failed when it has
// none).
func (vm *VM) raiseErr(L *lua.LState, err error) {
	var ce *codes.Error
	if errors.As(err, &ce) {
		vm.raise(L, ce.Code, "%s", ce.Message)
	}
	vm.raise(L, codes.HandlerFailed, "%v", err)
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
		var b []byte
		var err error
		if key == codec.JSONName {
			b, err = codec.AppendJSON(nil, L, v)
		} else if c, ok := codec.Lookup(key); ok {
			b, err = c.Encode(L, codec.SchemaName(r), v)
		} else {
			err = fmt.Errorf("no body codec %q", key)
		}
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
		target := L.CheckTable(1)
		gw := vm.gateway(L, name)
		single := target.RawGetString("session_id") != lua.LNil
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
			rejected = gw.Push(p)
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
