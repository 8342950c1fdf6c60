package luavm

import (
	"encoding/json"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// roomChunk is shield.room.join and the shield.room.join route's handler
// (docs/rooms.md §4.4, §8.1): ask the room for a seat, then bind the
// session to it; a bind that fails gives the seat back.
var roomChunk = &builtin{name: "room", src: `
local ask, bind, send, fail, decode = ...
local pcall, error, type = pcall, error, type
local function join(client, id, opts)
  if type(id) ~= "string" then error("shield.room.join: room_id must be a string", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("shield.room.join: opts must be a table or nil", 2) end
  ask(client, id, opts)
  local ok, ref = pcall(bind, client, id)
  if not ok then
    send({room = id}, "\0abort", client)
    error(ref, 0)
  end
  return ref
end
local function route(ctx, client, body)
  local ok, req = pcall(decode, body)
  if not ok or type(req) ~= "table" or type(req.room) ~= "string" then
    fail("client_rpc.decode_failed", 'shield.room.join: {"room": string} is required')
  end
  join(client, req.room, {token = req.token, meta = req.meta})
  return {room = req.room}
end
return join, route
`}

// installRooms adds shield.room (§4): create, join, current.
func (vm *VM) installRooms(sh *lua.LTable, check *lua.LFunction) {
	L := vm.l
	t := L.NewTable()
	t.RawSetString("create", vm.suspending(check, vm.luaRoomCreate))
	t.RawSetString("current", L.NewFunction(func(L *lua.LState) int {
		if vm.room == nil {
			L.Push(lua.LNil)
		} else {
			L.Push(vm.room.obj)
		}
		return 1
	}))
	L.Push(roomChunk.function(L))
	L.Push(vm.suspending(check, vm.luaRoomAsk))
	L.Push(vm.suspending(check, vm.luaRoomBind))
	L.Push(L.NewFunction(vm.luaSend))
	L.Push(L.NewFunction(func(L *lua.LState) int {
		vm.raise(L, codes.Code(L.CheckString(1)), "%s", L.CheckString(2))
		return 0
	}))
	L.Push(L.NewFunction(luaJSONDecode))
	L.Call(5, 2)
	t.RawSetString("join", L.Get(-2))
	vm.joinRoute = L.Get(-1).(*lua.LFunction)
	L.Pop(2)
	sh.RawSetString("room", t)
}

// shield.room.create(kind, params) -> room id (§4.3): a call the runtime
// turns into a new room, answered once room_init returned.
func (vm *VM) luaRoomCreate(L *lua.LState) int {
	t := vm.running(L, "shield.room.create")
	kind := L.CheckString(1)
	var args [][]byte
	if v := L.Get(2); v != lua.LNil {
		if _, ok := v.(*lua.LTable); !ok {
			L.ArgError(2, "params must be a table or nil")
		}
		b, err := EncodeValue(L, v)
		if err != nil {
			L.ArgError(2, "cannot be sent to a room: "+err.Error())
		}
		args = [][]byte{b}
	}
	return vm.callRoom(L, t, &Call{To: Address{Service: kind, Room: CreateRoom}, Method: "room_init", Args: args})
}

// callRoom sends c as a call of t and suspends it until the reply.
func (vm *VM) callRoom(L *lua.LState, t *task, c *Call) int {
	c.From, c.Deadline, c.Gen = vm.host.Self(), t.deadline, vm.gen
	id, ok := vm.addPending(&pending{kind: pendCall, task: t})
	if !ok {
		return vm.fail(L, codes.Busy, "max_pending (%d) timers and calls already in flight", vm.spec.MaxPending)
	}
	c.ID = id
	if err := vm.host.Route(c); err != nil {
		delete(vm.pending, id)
		return vm.fail(L, err.Code, "%s", err.Message)
	}
	t.waiting = id
	return L.Yield(vm.wait)
}

// The Go half of join's first step: the room holds a seat and runs
// room_join.
func (vm *VM) luaRoomAsk(L *lua.LState) int {
	t := vm.running(L, "shield.room.join")
	ref := checkRef(L, 1)
	id := L.CheckString(2)
	if vm.room != nil {
		return vm.fail(L, codes.InRoom, "shield.room.join: the session is in room %s: leave it first", vm.room.id)
	}
	if _, _, ok := ParseRoomID(id); !ok {
		return vm.fail(L, codes.RoomNotFound, "no room %q", id)
	}
	opts := map[string]json.RawMessage{}
	if o, ok := L.Get(3).(*lua.LTable); ok {
		for _, k := range []string{"token", "meta"} {
			if v := o.RawGetString(k); v != lua.LNil {
				b, err := EncodeValue(L, v)
				if err != nil {
					L.ArgError(3, "opts."+k+": "+err.Error())
				}
				opts[k] = b
			}
		}
	}
	rb, _ := json.Marshal(RefJSON(ref))
	ob, _ := json.Marshal(opts)
	return vm.callRoom(L, t, &Call{To: Address{Room: id}, Method: methodJoin, Args: [][]byte{rb, ob}})
}

// RefJSON is a ClientRef as the JSON mapping copies it.
func RefJSON(r egress.ClientRef) map[string]any {
	m := map[string]any{"session_id": r.SessionID, "epoch": r.Epoch, "gateway": r.Gateway}
	if r.PlayerID != "" {
		m["player_id"] = r.PlayerID
	}
	return m
}

// The Go half of join's bind: the session moves to the room, with this VM
// as its return target.
func (vm *VM) luaRoomBind(L *lua.LState) int {
	t := vm.running(L, "shield.room.join")
	ref := checkRef(L, 1)
	id := L.CheckString(2)
	kind, _, _ := ParseRoomID(id)
	sink := vm.sink()
	if sink == nil {
		return vm.fail(L, codes.Unavailable, "shield.room.join: no gateway is attached")
	}
	pid, ok := vm.addPending(&pending{kind: pendBind, task: t, ref: ref})
	if !ok {
		return vm.fail(L, codes.Busy, "max_pending (%d) timers and calls already in flight", vm.spec.MaxPending)
	}
	host, self, gen := vm.host, vm.host.Self(), vm.gen
	target := egress.ActorID{Service: kind, Instance: -1, Room: id}
	func() {
		defer vm.guard("gateway Bind")
		sink.Bind(&egress.BindRequest{Ref: ref, PlayerID: ref.PlayerID, Target: target, Caller: self, Return: self},
			func(nref egress.ClientRef, err *codes.Error) {
				host.Return(&Result{To: self, ID: pid, Gen: gen, Ref: nref, Err: err})
			})
	}()
	t.waiting = pid
	return L.Yield(vm.wait)
}

// ParseRoomID splits a room id (§3.1): <kind>/<16 lowercase hex>@<node>.
func ParseRoomID(id string) (kind, node string, ok bool) {
	kind, rest, ok := strings.Cut(id, "/")
	if !ok || kind == "" || len(rest) < 18 || rest[16] != '@' || len(id) > 255 {
		return "", "", false
	}
	for i := 0; i < 16; i++ {
		if c := rest[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", "", false
		}
	}
	return kind, rest[17:], true
}

// builtinRoute serves the reserved c2s routes (§8.1) in whatever VM is
// the session's target: join anywhere; leave and sync in a room.
func (vm *VM) builtinRoute(t *task, in *ingress.ClientIngress, h *handler) {
	c := &in.Client
	switch c.RouteID {
	case descriptor.RouteRoomJoin:
		vm.start(t, vm.joinRoute, vm.ctx, vm.frameClient(c, h), lua.LString(in.Body))
	case descriptor.RouteRoomLeave:
		var m *member
		if vm.room != nil {
			m = vm.room.member(c.Ref.PlayerID)
		}
		if m == nil || !m.live || m.leaving || m.ref != c.Ref {
			vm.finish(t, nil, codes.New(codes.NotMember, "shield.room.leave: the session is in no room"))
			return
		}
		vm.finish(t, []lua.LValue{vm.l.NewTable()}, nil)
		vm.leave(m, "left", "", true)
	case descriptor.RouteRoomSync:
		if vm.room != nil {
			vm.roomSync(c.Ref, in.Body)
		}
		vm.finish(t, nil, nil)
	default:
		vm.finish(t, nil, codes.New(codes.HandlerMissing, "no binding for route %d", c.RouteID))
	}
}

// roomSync is shield.room.sync (§7.5): the member says which version it
// holds; the next tick sends the delta from there, or a snapshot.
func (vm *VM) roomSync(ref egress.ClientRef, body []byte) {
	r := vm.room
	m := r.member(ref.PlayerID)
	if m == nil || !m.live || m.ref != ref {
		return
	}
	var v struct {
		Version *uint64 `json:"version"`
	}
	if json.Unmarshal(body, &v) != nil || v.Version == nil || *v.Version > r.version || r.version-*v.Version > uint64(len(r.history)) {
		m.snapshot, m.snapCause = true, "sync"
		return
	}
	m.base, m.snapshot = *v.Version, false
}
