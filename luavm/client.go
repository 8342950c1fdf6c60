package luavm

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// The `client` a handler or a session hook receives (SPEC §8, ClientContext)
// is a read-only userdata, not a table: its fields are read from the Go
// value on access (__index), and assigning one raises. A table with eight
// string keys cost gopher-lua a table, a slice and a boxed value per field
// for every message, most of which the handler never read (a quarter of a
// forward_raw echo's CPU in a `gateway bench` profile); the userdata is
// one allocation, and a field costs only when it is read.
//
// What a script sees of it as a table, it still sees: pairs, ipairs and
// next walk the fields (installIteration), and shield.json.encode, the
// JSON mapping between VMs (shield.call arguments) and shield.log write it
// as the table of its fields (codec.Tabler). What differs, as
// docs/lua-api.md says: type(client) is "userdata", and rawget, rawset,
// setmetatable and # do not take it.

// clientKind says which fields a client has.
type clientKind uint8

const (
	clientFrame   clientKind = iota // a handler's: every field of SPEC §8
	clientSession                   // client_bound, client_suspended, client_resumed: the ref's fields and remote_addr
	clientRefOnly                   // client_disconnected: the ref's fields
)

// clientValue is a client and the userdata that stands for it, in one
// allocation: the userdata's Value points back into the same object. A
// script may keep it, so it is never reused (the handler's task is, see
// VM.recycle). Every message allocates one, so it holds only what the
// handler cannot find elsewhere: 128 bytes, where the whole
// ClientContext made it 160.
type clientValue struct {
	ud         lua.LUserData
	ref        egress.ClientRef
	requestID  uint64
	remoteAddr string
	// h is a frame's handler, whose route name and id are boxed once per
	// compiled route (the route and route_id fields); nil for a session
	// hook's client.
	h    *handler
	kind clientKind
}

var _ codec.Tabler = (*clientValue)(nil)

// clientFields are the fields in the order a table of them lists them.
var clientFields = []string{"session_id", "epoch", "player_id", "gateway", "route", "route_id", "request_id", "remote_addr"}

// installClientMeta makes the metatable every client of the VM shares.
func (vm *VM) installClientMeta() {
	L := vm.l
	meta := L.CreateTable(0, 4)
	meta.RawSetString("__index", L.NewFunction(vm.clientIndex))
	meta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("client is read-only: it is what the gateway vouches for (copy the fields you need)")
		return 0
	}))
	meta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		cv := clientOf(L.Get(1))
		L.Push(lua.LString(fmt.Sprintf("client: session %d, epoch %d", cv.ref.SessionID, cv.ref.Epoch)))
		return 1
	}))
	meta.RawSetString("__metatable", lua.LFalse)
	vm.clientMeta = meta
}

// frameClient makes the handler's client for the frame c on handler h's
// route.
func (vm *VM) frameClient(c *ingress.ClientContext, h *handler) *lua.LUserData {
	if c.Route != h.route.Name {
		// The gateway named the route otherwise (its descriptor and this
		// VM's differ, as they may while a reload spreads): the client
		// says what the gateway said.
		h = &handler{fn: h.fn, route: h.route, name: lua.LString(c.Route), id: h.id}
	}
	return &vm.newClient(c.Ref, c.RequestID, c.RemoteAddr, clientFrame, h).ud
}

// sessionClient is a session hook's client: ref's fields, and remote_addr
// unless kind is clientRefOnly.
func (vm *VM) sessionClient(ref egress.ClientRef, remote string, kind clientKind) *lua.LUserData {
	return &vm.newClient(ref, 0, remote, kind, nil).ud
}

// newClient makes a client, as kind says, and its userdata.
func (vm *VM) newClient(ref egress.ClientRef, requestID uint64, remote string, kind clientKind, h *handler) *clientValue {
	cv := &clientValue{ref: ref, requestID: requestID, remoteAddr: remote, h: h, kind: kind}
	cv.ud.Value, cv.ud.Metatable, cv.ud.Env = cv, vm.clientMeta, vm.l.Env
	return cv
}

// clientOf returns the client v is, or nil.
func clientOf(v lua.LValue) *clientValue {
	if ud, ok := v.(*lua.LUserData); ok {
		cv, _ := ud.Value.(*clientValue)
		return cv
	}
	return nil
}

// clientIndex is the clients' __index: client.<field>.
func (vm *VM) clientIndex(L *lua.LState) int {
	cv := clientOf(L.Get(1))
	key, _ := L.Get(2).(lua.LString)
	switch {
	case cv == nil:
		L.Push(lua.LNil)
	case key == "gateway":
		L.Push(vm.gatewayLValue(cv.ref.Gateway)) // boxed once for the VM, not per client
	default:
		L.Push(cv.field(string(key)))
	}
	return 1
}

// field is the value of one field, nil for a field the client has not.
func (cv *clientValue) field(key string) lua.LValue {
	r := &cv.ref
	switch key {
	case "session_id":
		return idValue(r.SessionID)
	case "epoch":
		return idValue(r.Epoch)
	case "player_id":
		if r.PlayerID != "" {
			return lua.LString(r.PlayerID)
		}
		return lua.LNil
	case "gateway":
		return lua.LString(r.Gateway)
	case "remote_addr":
		if cv.kind != clientRefOnly {
			return lua.LString(cv.remoteAddr)
		}
		return lua.LNil
	}
	if cv.kind != clientFrame {
		return lua.LNil
	}
	switch key {
	case "route":
		return cv.h.name
	case "route_id":
		return cv.h.id
	case "request_id":
		return idValue(cv.requestID)
	}
	return lua.LNil
}

// Table is the client as the table of its fields (codec.Tabler): a new
// one each time, which the script may change freely.
func (cv *clientValue) Table(L *lua.LState) *lua.LTable {
	t := L.CreateTable(0, len(clientFields))
	for _, k := range clientFields {
		if v := cv.field(k); v != lua.LNil {
			t.RawSetString(k, v)
		}
	}
	return t
}

// gatewayLValue is a gateway name boxed: the last one is kept, since one
// gateway (or a few, in a cluster) sends a VM nearly all its frames.
func (vm *VM) gatewayLValue(name string) lua.LValue {
	if name != vm.gatewayName || vm.gatewayValue == nil {
		vm.gatewayName, vm.gatewayValue = name, lua.LString(name)
	}
	return vm.gatewayValue
}

// installIteration makes pairs, ipairs and next take a codec.Tabler
// userdata (a client) as the table it stands for. For anything else they
// do what the base library's do, with its errors: the iterators are the
// base library's own.
func (vm *VM) installIteration() {
	L := vm.l
	g := L.G.Global
	next := g.RawGetString("next")
	L.Push(g.RawGetString("ipairs"))
	L.Push(L.NewTable())
	L.Call(1, 1)
	ipairsAux := L.Get(-1)
	L.Pop(1)
	table := func(L *lua.LState) *lua.LTable {
		if ud, ok := L.Get(1).(*lua.LUserData); ok {
			if tv, ok := ud.Value.(codec.Tabler); ok {
				return tv.Table(L)
			}
		}
		return L.CheckTable(1)
	}
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := table(L)
		L.Push(next)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	g.RawSetString("ipairs", L.NewFunction(func(L *lua.LState) int {
		t := table(L)
		L.Push(ipairsAux)
		L.Push(t)
		L.Push(lua.LNumber(0))
		return 3
	}))
	g.RawSetString("next", L.NewFunction(func(L *lua.LState) int {
		t := table(L)
		k, v := t.Next(L.Get(2)) // none: nil, the first key
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(v)
		return 2
	}))
}
