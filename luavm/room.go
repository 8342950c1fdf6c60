package luavm

import (
	"fmt"
	"slices"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/statesync"
)

// RoomSpec makes a VM a room (docs/rooms.md §1, §3): one VM per room,
// loaded from its kind's script.
type RoomSpec struct {
	// ID is the room's id (§3.1); empty for the kind's own compile at
	// start and reload (layer 3), which never runs a room.
	ID     string
	Config config.Room
	// Metrics counts the kind's events; nil counts nothing.
	Metrics RoomMetrics
	// Stats is where the room publishes its members and tick; nil: nowhere.
	Stats *RoomStats
}

// RoomHost is what a room VM needs from its actor besides Host: to be told
// that the room closed, so that the actor stops, and the node's name for
// the END frames' incidents.
type RoomHost interface {
	Host
	// RoomClosed runs once, after room_close: the actor ends the room's
	// VM once the current step is over and answers what still waits.
	RoomClosed()
}

// roomHooks are the hooks of a room module (§4.1): run by the runtime, not
// callable as methods.
var roomHooks = []string{"room_init", "room_join", "room_leave", "room_suspended", "room_resumed",
	"room_tick", "room_seat_released", "room_close"}

// roomForbidden are the ordinary hooks a room module must not define (§3.3).
var roomForbidden = []string{"init", "stop", "reload_save", "reload_load", "client_bound",
	"client_suspended", "client_resumed", "client_disconnected"}

// checkRoomModule is layer 3 for a room kind: its module may not define
// the hooks the runtime runs for it.
func (vm *VM) checkRoomModule(spec Spec) error {
	var errs config.Errors
	for _, name := range roomForbidden {
		if _, ok := vm.module.RawGetString(name).(*lua.LFunction); ok {
			errs = append(errs, &config.Error{File: spec.Script, Actor: spec.Service,
				Msg: fmt.Sprintf("room service module defines %s: rooms use room_join, room_suspended, room_resumed and room_leave", name)})
		}
	}
	for _, name := range roomHooks {
		if fn, ok := vm.module.RawGetString(name).(*lua.LFunction); ok {
			vm.hooks[name] = fn
		}
	}
	return errs.Err()
}

// member is one membership of a room (§5): from the seat its room_join
// accepted to its leave.
type member struct {
	playerID    string
	ref         egress.ClientRef // the session at the room's epoch once live; the joiner's before
	ret         egress.ActorID   // where the session goes back to
	meta        lua.LValue
	seat        lua.LValue // room_join's seat: nil, or the reservation it used
	joinedAt    time.Time
	holdTill    time.Time // a seat held for the join's bind, until live
	live        bool      // the bind into the room was heard (Bound)
	leaving     bool
	suspended   bool
	suspendedAt time.Time // when it was suspended: it leaves reconnect_grace after
	seq         uint64
	inputs      []roomInput
	dropped     int
	view        statesync.View
	viewKey     string
	// The member's sync: the version last accepted for it, and whether
	// its next frame must be a snapshot.
	base      uint64
	snapshot  bool
	snapCause string
}

// room is a room VM's own state; only its actor's goroutine touches it.
type room struct {
	id, kind  string
	cfg       config.Room
	obj       *lua.LTable // ctx.room: a read-only proxy over fields
	fields    *lua.LTable
	createdAt time.Time
	period    time.Duration
	t0        time.Time // when room_init returned: ticks are on its grid
	grid      uint64    // the grid index of the next tick
	tick      uint64
	started   bool
	closing   string // the close reason, once decided
	closeMsg  string
	closed    bool
	members   []*member // by join time
	// reservations are the reserved seats by token (room_seats.go).
	reservations map[string]*reservation
	idleSince    time.Time
	failed       int // ticks failed in a row (on_tick_error continue)

	// The synced state: the tree at version, and the change sets of the
	// last history versions (history[i] is version-len+1+i's).
	tree    map[string]any
	version uint64
	history []statesync.Changes
	// answers are the input requests of the coming tick, answered once it
	// returns.
	answers []pendingInput
	taken   uint64 // inputs taken, for their order

	m     RoomMetrics
	stats *RoomStats
}

func (r *room) nextOrder() uint64 { r.taken++; return r.taken }

// roomInput is one input frame kept for the next tick (§6).
type roomInput struct {
	m       *member
	route   string
	routeID uint32
	body    lua.LValue
	at      time.Time
	seq     uint64
	order   uint64 // when the room took it, across members
}

func (r *room) member(pid string) *member {
	for _, m := range r.members {
		if m.playerID == pid {
			return m
		}
	}
	return nil
}

func (r *room) remove(m *member) {
	if i := slices.Index(r.members, m); i >= 0 {
		r.members = slices.Delete(r.members, i, i+1)
	}
	r.publish()
}

// installRoom makes this VM the room spec.Room names: ctx.room and
// shield.room.current() are its object, ctx.instance is -1.
func (vm *VM) installRoom(spec *RoomSpec) {
	L := vm.l
	r := &room{id: spec.ID, kind: vm.service, cfg: spec.Config, createdAt: time.Now(),
		period: time.Second / time.Duration(max(spec.Config.TickHz, 1)), tree: map[string]any{},
		m: spec.Metrics, stats: spec.Stats}
	if r.m == nil {
		r.m = noRoomMetrics{}
	}
	r.idleSince = r.createdAt
	vm.room = r
	r.fields = L.CreateTable(0, 8)
	r.fields.RawSetString("id", lua.LString(r.id))
	r.fields.RawSetString("kind", lua.LString(r.kind))
	r.fields.RawSetString("params", lua.LNil)
	r.fields.RawSetString("created_at", lua.LNumber(r.createdAt.UnixMilli()))
	r.fields.RawSetString("tick", lua.LNumber(0))
	r.fields.RawSetString("dt", lua.LNumber(0))
	r.fields.RawSetString("state", L.NewTable())
	for name, fn := range map[string]lua.LGFunction{
		"members": vm.roomMembers, "member": vm.roomMember, "remove": vm.roomRemove,
		"close": vm.roomClose, "view": vm.roomView, "reserve": vm.roomReserve,
	} {
		r.fields.RawSetString(name, L.NewFunction(fn))
	}
	r.obj = L.NewTable()
	meta := L.CreateTable(0, 3)
	meta.RawSetString("__index", r.fields)
	meta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		key := L.CheckString(2)
		if key != "state" {
			L.RaiseError("room.%s is read-only: only room.state may be assigned", key)
		}
		t, ok := L.Get(3).(*lua.LTable)
		if !ok {
			L.RaiseError("room.state must be a table, got %s", L.Get(3).Type())
		}
		r.fields.RawSetString("state", t)
		return 0
	}))
	meta.RawSetString("__metatable", lua.LFalse)
	r.obj.Metatable = meta
	vm.ctxInstance = lua.LNumber(-1)
}

// IsRoom reports whether the VM is a room's.
func (vm *VM) IsRoom() bool { return vm.room != nil }

// RoomID is the room's id, "" for other VMs.
func (vm *VM) RoomID() string {
	if vm.room == nil {
		return ""
	}
	return vm.room.id
}

// RoomMembers is the room's member count, for metrics and /admin/rooms.
func (vm *VM) RoomMembers() int {
	if vm.room == nil {
		return 0
	}
	return len(vm.room.members)
}

// RoomTickNumber is the last tick run.
func (vm *VM) RoomTickNumber() uint64 {
	if vm.room == nil {
		return 0
	}
	return vm.room.tick
}

// memberTable is a new member table (§4.2).
func (vm *VM) memberTable(m *member) *lua.LTable {
	t := vm.l.CreateTable(0, 7)
	t.RawSetString("player_id", lua.LString(m.playerID))
	t.RawSetString("ref", vm.refTable(m.ref))
	t.RawSetString("meta", m.meta)
	t.RawSetString("seat", m.seat)
	t.RawSetString("joined_at", lua.LNumber(m.joinedAt.UnixMilli()))
	t.RawSetString("suspended", lua.LBool(m.suspended))
	t.RawSetString("inputs_dropped", lua.LNumber(m.dropped))
	return t
}

// who reads a room method's player argument: a player_id, or a table
// with one (a member, a ClientRef).
func who(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case *lua.LTable:
		if p, ok := v.RawGetString("player_id").(lua.LString); ok {
			return string(p)
		}
	default:
		if cv := clientOf(v); cv != nil {
			return cv.ref.PlayerID
		}
	}
	L.ArgError(n, "a player_id, or a member or ClientRef with one, is required")
	return ""
}

// room:members() -> a new array of member tables, by join time.
func (vm *VM) roomMembers(L *lua.LState) int {
	t := L.CreateTable(len(vm.room.members), 0)
	for _, m := range vm.room.members {
		if m.live && !m.leaving {
			t.Append(vm.memberTable(m))
		}
	}
	L.Push(t)
	return 1
}

// room:member(player_id) -> the member table, or nil.
func (vm *VM) roomMember(L *lua.LState) int {
	m := vm.room.member(who(L, 2))
	if m == nil || !m.live || m.leaving {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(vm.memberTable(m))
	return 1
}

// room:remove(who[, message]) -> true, or false for a non-member: the
// membership ends with reason removed after the current run.
func (vm *VM) roomRemove(L *lua.LState) int {
	m := vm.room.member(who(L, 2))
	if m == nil || !m.live || m.leaving {
		L.Push(lua.LFalse)
		return 1
	}
	vm.leave(m, "removed", L.OptString(3, ""), true)
	L.Push(lua.LTrue)
	return 1
}

// room:close([message]): the room closes after the current run.
func (vm *VM) roomClose(L *lua.LState) int {
	vm.closeRoom("requested", L.OptString(2, ""))
	return 0
}

// room:view(who, prefixes): the member sees only those paths (§7.4); nil
// prefixes sees everything again. Sent as a snapshot at the next tick.
func (vm *VM) roomView(L *lua.LState) int {
	m := vm.room.member(who(L, 2))
	if m == nil {
		L.Push(lua.LFalse)
		return 1
	}
	var v statesync.View
	if t, ok := L.Get(3).(*lua.LTable); ok {
		var prefixes []statesync.Path
		for i := 1; i <= t.Len(); i++ {
			var p statesync.Path
			switch k := t.RawGetInt(i).(type) {
			case lua.LString:
				p = statesync.Path{string(k)}
			case *lua.LTable:
				for j := 1; j <= k.Len(); j++ {
					s, ok := k.RawGetInt(j).(lua.LString)
					if !ok {
						L.RaiseError("room:view: prefix %d: a path is a string key or an array of 1 to 16 keys", i)
					}
					p = append(p, string(s))
				}
			}
			prefixes = append(prefixes, p) // NewView checks the lengths
		}
		var err error
		if v, err = statesync.NewView(prefixes...); err != nil {
			L.RaiseError("room:view: %v", err)
		}
	} else if L.Get(3) != lua.LNil {
		L.ArgError(3, "a table of prefixes, or nil")
	}
	if v.Key() != m.viewKey {
		m.view, m.viewKey = v, v.Key()
		m.snapshot, m.snapCause = true, "view"
	}
	L.Push(lua.LTrue)
	return 1
}

// closeRoom decides the room's close (§10.3); it happens when the current
// run is over (afterRun).
func (vm *VM) closeRoom(reason, msg string) {
	r := vm.room
	if r.closing == "" {
		r.closing, r.closeMsg = reason, msg
	}
}

// RoomReady reports whether room_init returned and the room takes frames.
func (vm *VM) RoomReady() bool { return vm.room != nil && vm.room.started && vm.room.closing == "" }

// hookTask starts one of the room's hooks as a task about ref (nil: none).
func (vm *VM) hookTask(name string, ref *egress.ClientRef, onDone func([]lua.LValue, *codes.Error), args ...lua.LValue) bool {
	fn := vm.hooks[name]
	if fn == nil {
		return false
	}
	t := &task{what: name + " " + vm.room.id, deadline: time.Now().Add(vm.spec.HandlerTimeout), ref: ref, onDone: onDone}
	vm.start(t, fn, append([]lua.LValue{vm.ctx}, args...)...)
	return true
}
