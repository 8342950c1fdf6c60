package luavm

import (
	"encoding/json"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// The internal methods a joining VM calls on a room (docs/rooms.md §4.4):
// a script cannot name them, their first byte being NUL.
const (
	methodJoin  = "\x00join"
	methodAbort = "\x00abort"
	// CreateRoom is the Address.Room of shield.room.create's call: the
	// runtime makes a room of Address.Service and runs RoomInit.
	CreateRoom = "\x00create"
)

// joinHold bounds how long a seat room_join accepted waits for its bind.
const joinHold = 10 * time.Second

// RoomInit runs room_init(ctx, params) (§4.1) for the create c; its
// caller gets the room id once it returned, or its error, and then the
// room never existed (RoomClosed follows at once).
func (vm *VM) RoomInit(c *Call) {
	r := vm.room
	params := lua.LValue(lua.LNil)
	if len(c.Args) > 0 {
		v, err := DecodeValue(vm.l, c.Args[0])
		if err != nil {
			vm.initDone(c, nil, codes.New(codes.Unavailable, "room params: %v", err))
			return
		}
		params = v
	}
	r.fields.RawSetString("params", params)
	var tokens map[string]string
	if len(c.Args) > 1 { // a match's seats (§9.2), reserved before room_init
		var err error
		if tokens, err = vm.reserveSeats(c.Args[1]); err != nil {
			vm.initDone(c, nil, codes.New(codes.Unavailable, "%v", err))
			return
		}
	}
	fn := vm.hooks["room_init"]
	if fn == nil {
		vm.initDone(c, tokens, vm.walkVersion(0))
		return
	}
	t := &task{what: "room_init " + r.id, deadline: time.Now().Add(vm.spec.HandlerTimeout)}
	if !c.Deadline.IsZero() && c.Deadline.Before(t.deadline) {
		t.deadline = c.Deadline
	}
	t.onDone = func(_ []lua.LValue, err *codes.Error) {
		if err == nil {
			err = vm.walkVersion(0)
		}
		vm.initDone(c, tokens, err)
	}
	vm.start(t, fn, vm.ctx, params)
}

// initDone answers the create and starts the tick grid, or closes the
// room that never was. A create that reserved seats gets their tokens by
// player_id as a second value.
func (vm *VM) initDone(c *Call, tokens map[string]string, err *codes.Error) {
	r := vm.room
	res := &Result{To: c.From, ID: c.ID, Gen: c.Gen, Reply: c.Reply, Err: err}
	if err == nil {
		id, _ := json.Marshal(r.id)
		res.Values = [][]byte{id}
		if tokens != nil {
			tb, _ := json.Marshal(tokens)
			res.Values = append(res.Values, tb)
		}
		r.started, r.t0, r.grid = true, time.Now(), 1
		r.idleSince = r.t0
		r.m.Created("ok")
	} else {
		r.m.Created("failed")
	}
	if vm.host != nil && c.ID != 0 {
		vm.host.Return(res)
	}
	if err != nil {
		r.closed = true
		vm.roomHost().RoomClosed()
	}
}

func (vm *VM) roomHost() RoomHost { return vm.host.(RoomHost) }

// handleRoomCall serves the internal methods; it reports false for a
// method of the module.
func (vm *VM) handleRoomCall(c *Call) bool {
	switch c.Method {
	case methodJoin:
		vm.roomJoin(c)
	case MethodRelease:
		vm.releaseCall(c.Args)
	case methodAbort:
		if len(c.Args) > 0 {
			if ref, ok := RefOfJSON(c.Args[0]); ok {
				if m := vm.room.member(ref.PlayerID); m != nil && !m.live && m.ref.SessionID == ref.SessionID {
					vm.room.remove(m)
					vm.room.m.Leave("join_failed")
					vm.hookTask("room_leave", &ref, nil, vm.memberTable(m), lua.LString("join_failed"))
				}
			}
		}
	default:
		return false
	}
	return true
}

// RefOfJSON reads a ClientRef copied out of a VM under the JSON mapping
// (RefJSON).
func RefOfJSON(b []byte) (egress.ClientRef, bool) {
	var v struct {
		SessionID uint64 `json:"session_id"`
		Epoch     uint64 `json:"epoch"`
		PlayerID  string `json:"player_id"`
		Gateway   string `json:"gateway"`
	}
	if json.Unmarshal(b, &v) != nil || v.SessionID == 0 {
		return egress.ClientRef{}, false
	}
	return egress.ClientRef{SessionID: v.SessionID, Epoch: v.Epoch, PlayerID: v.PlayerID, Gateway: v.Gateway}, true
}

// roomJoin is a join's first step, in the room (§4.4): a seat, then
// room_join. Accepted, the seat is held for the bind.
func (vm *VM) roomJoin(c *Call) {
	r := vm.room
	reply := func(err *codes.Error) {
		if c.ID != 0 {
			vm.host.Return(&Result{To: c.From, ID: c.ID, Gen: c.Gen, Reply: c.Reply, Err: err})
		}
	}
	ref, ok := RefOfJSON(c.Args[0])
	switch {
	case !ok || len(c.Args) < 2:
		reply(codes.New(codes.Unavailable, "a malformed join"))
		return
	case !r.started || r.closing != "":
		reply(codes.New(codes.RoomNotFound, "room %s is closing", r.id))
		return
	case ref.PlayerID == "":
		reply(codes.New(codes.Unavailable, "shield.room.join: the client has no player_id"))
		return
	}
	if m := r.member(ref.PlayerID); m != nil {
		if m.live || time.Now().Before(m.holdTill) {
			reply(codes.New(codes.InRoom, "player %q is a member of room %s already", ref.PlayerID, r.id))
			return
		}
		r.remove(m) // a hold whose bind never came
	}
	var opts struct {
		Meta  json.RawMessage `json:"meta"`
		Token *string         `json:"token"`
	}
	_ = json.Unmarshal(c.Args[1], &opts)
	var seat *reservation
	switch now := time.Now(); {
	case opts.Token != nil:
		if seat = r.takeSeat(*opts.Token, ref.PlayerID, now); seat == nil {
			r.m.Join("reservation_invalid")
			reply(codes.New(codes.ReservationInvalid, "the token is unknown, used, expired, or not for player %q in room %s", ref.PlayerID, r.id))
			return
		}
	case r.seatsTaken() >= r.cfg.MaxMembers: // members, seats held for binds, reservations
		r.m.Join("full")
		reply(codes.New(codes.RoomFull, "room %s has %d members and %d reserved seats (room.max_members %d)",
			r.id, len(r.members), len(r.reservations), r.cfg.MaxMembers))
		return
	}
	meta := lua.LValue(lua.LNil)
	if len(opts.Meta) > 0 {
		if v, err := DecodeValue(vm.l, opts.Meta); err == nil {
			meta = v
		}
	}
	m := &member{playerID: ref.PlayerID, ref: ref, ret: c.From, meta: meta, seat: vm.seatTable(seat),
		joinedAt: time.Now(), holdTill: time.Now().Add(joinHold)}
	r.members = append(r.members, m)
	r.publish()
	accept := func(vals []lua.LValue, err *codes.Error) {
		if err == nil {
			err = joinVerdict(vals)
		}
		switch {
		case err == nil:
			r.m.Join("ok")
		case err.Code == codes.HandlerFailed || err.Code == codes.Timeout:
			r.m.Join("failed") // it raised, or ran out of time: not a verdict
		default:
			r.m.Join("refused")
		}
		if err != nil {
			r.remove(m)
			if err.Code == codes.JoinRefused && (len(vals) == 0 || vals[0] != lua.LFalse) {
				// Nothing returned is the forgotten `return true` (§4.1),
				// named as the nil it is.
				got := lua.LNil.Type().String()
				if len(vals) > 0 {
					got = vals[0].Type().String()
				}
				vm.log.Warn("room_join returned "+got+": return true to accept", "room", r.id)
			}
		}
		reply(err)
	}
	if !vm.hookTask("room_join", &ref, accept, vm.sessionClient(ref, "", clientRefOnly), meta, m.seat) {
		r.m.Join("ok")
		reply(nil)
	}
}

// joinVerdict reads room_join's return (§4.1): true accepts; false, code
// [, message] refuses with that code; anything else refuses.
func joinVerdict(vals []lua.LValue) *codes.Error {
	if len(vals) > 0 && vals[0] == lua.LTrue {
		return nil
	}
	if len(vals) > 1 && vals[0] == lua.LFalse {
		if code, ok := vals[1].(lua.LString); ok && codes.ValidBusiness(string(code)) {
			msg := ""
			if len(vals) > 2 {
				msg = lua.LVAsString(vals[2])
			}
			return codes.New(codes.Code(code), "%s", msg)
		}
	}
	return codes.New(codes.JoinRefused, "room_join refused the join")
}

// roomBound is the bind into the room heard (§4.4 step 4): the member is
// live at the room's epoch, and its snapshot goes out at once.
func (vm *VM) roomBound(b *ingress.Bound) {
	r := vm.room
	m := r.member(b.Ref.PlayerID)
	if m == nil || m.live || m.ref.SessionID != b.Ref.SessionID || r.closing != "" {
		// No seat waits for this session (its hold ran out, or the room
		// is closing): send it home at once.
		ret := b.Return
		if m != nil && !m.live && m.ref.SessionID == b.Ref.SessionID {
			r.remove(m)
		}
		vm.bindBack(b.Ref, ret, "join_failed", "")
		return
	}
	m.ref, m.live, m.snapshot, m.snapCause = b.Ref, true, true, "join"
	r.publish()
	vm.syncMember(m)
}

// roomSession handles a member's session messages (§5.1, §5.3).
func (vm *VM) roomSession(msg any) {
	r := vm.room
	switch msg := msg.(type) {
	case *ingress.Bound:
		vm.roomBound(msg)
	case *ingress.Suspended:
		if m := r.member(msg.Ref.PlayerID); m != nil && m.live && m.ref == msg.Ref {
			m.suspended, m.suspendedAt = true, time.Now()
			vm.hookTask("room_suspended", &msg.Ref, nil, vm.memberTable(m))
		}
	case *ingress.Resumed:
		if m := r.member(msg.Ref.PlayerID); m != nil && m.live && m.ref == msg.Ref {
			m.suspended = false
			vm.hookTask("room_resumed", &msg.Ref, nil, vm.memberTable(m))
		}
	case *ingress.Disconnected:
		vm.stale.mark(msg.Ref.SessionID, msg.Ref.Epoch, true, time.Now(), vm.spec.HandlerTimeout)
		if m := r.member(msg.Ref.PlayerID); m != nil && m.ref.SessionID == msg.Ref.SessionID {
			vm.leave(m, msg.Reason, "", false)
		}
	}
}

// leave ends a membership (§5.2): the member goes, room_leave runs, and,
// when it returns or first suspends, END is pushed and the session bound
// back home. A closed session (bindBack false) gets neither.
func (vm *VM) leave(m *member, reason, msg string, bindBack bool) {
	r := vm.room
	if m.leaving {
		return
	}
	m.leaving = true
	r.remove(m)
	r.m.Leave(reason)
	if len(m.inputs) > 0 {
		r.m.InputsDropped("left", len(m.inputs))
	}
	if len(r.members) == 0 {
		r.idleSince = time.Now()
	}
	ref := m.ref
	vm.hookTask("room_leave", &ref, nil, vm.memberTable(m), lua.LString(reason))
	if bindBack {
		vm.bindBack(ref, m.ret, reason, msg)
	}
}

// bindBack binds a member's session back to its return target, with the
// leave reason for client_bound's from, and its END queued by that bind.
func (vm *VM) bindBack(ref egress.ClientRef, ret egress.ActorID, reason, msg string) {
	sink := vm.sink()
	if sink == nil {
		return
	}
	end := vm.endPush(ref, reason, msg)
	rm, size := vm.room.m, 0
	for _, b := range end.Bodies { // the same bytes under every codec
		size = len(b)
	}
	if ret.IsZero() {
		func() {
			defer vm.guard("gateway Push")
			if refused := sink.Push(end); len(refused) == 1 && refused[0] != "" {
				rm.StateRejected(refused[0].Reason(), 1)
			} else {
				rm.StateFrames(FrameEnd, 1, size)
			}
		}()
		return
	}
	// A bind back the room leaves be: its outcome changes nothing here
	// (the session closed, or was kicked, meanwhile). END rides on it, so
	// that the client hears it only once its calls go home.
	vm.stale.mark(ref.SessionID, ref.Epoch, false, time.Now(), vm.spec.HandlerTimeout)
	func() {
		defer vm.guard("gateway Bind")
		sink.Bind(&egress.BindRequest{Ref: ref, PlayerID: ref.PlayerID, Target: ret, Caller: vm.roomActor(), Left: reason, Then: end},
			func(_ egress.ClientRef, err *codes.Error) {
				// Any goroutine may run it: rm is safe for that.
				if err == nil {
					rm.StateFrames(FrameEnd, 1, size) // queued with the bind
				} else {
					rm.StateRejected(err.Code.Reason(), 1)
				}
			})
	}()
}

// roomActor is the room's ActorID (§3.1).
func (vm *VM) roomActor() egress.ActorID {
	return egress.ActorID{Service: vm.service, Instance: -1, Room: vm.room.id}
}

// afterRoomRun closes the room once a run decided it (§10.3): every member
// leaves with room_closed, room_close runs, and the actor ends the VM.
func (vm *VM) afterRoomRun() {
	r := vm.room
	if r == nil || r.closing == "" || r.closed || !r.started {
		return
	}
	r.closed = true
	r.reservations = nil // void (§10.3)
	msg := r.closeMsg
	for len(r.members) > 0 {
		m := r.members[0]
		if !m.live {
			r.remove(m)
			continue
		}
		vm.leave(m, "room_closed", msg, true)
	}
	r.m.Closed(r.closing)
	vm.hookTask("room_close", nil, nil, lua.LString(r.closing))
	vm.roomHost().RoomClosed()
}

// CloseRoom closes the room now (§10.3, the runtime's stop: reason
// shutdown): members leave with room_closed, room_close runs.
func (vm *VM) CloseRoom(reason string) {
	if vm.room == nil {
		return
	}
	vm.closeRoom(reason, "")
	vm.afterRoomRun()
}
