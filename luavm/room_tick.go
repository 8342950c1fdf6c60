package luavm

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/statesync"
)

// pendingInput is an input request answered once its tick returned (§6).
type pendingInput struct {
	in *ingress.ClientIngress
}

// RoomNext is when the room's next tick is due (§6), false before
// room_init returned or once it is closing.
func (vm *VM) RoomNext() (time.Time, bool) {
	r := vm.room
	if r == nil || !r.started || r.closed {
		return time.Time{}, false
	}
	return r.t0.Add(time.Duration(r.grid) * r.period), true
}

// RoomTick runs the tick that is due at now, if one is (§6): at most one,
// whatever the grid times passed since; those are skipped.
func (vm *VM) RoomTick(now time.Time) {
	at, ok := vm.RoomNext()
	if !ok || now.Before(at) {
		return
	}
	r := vm.room
	skipped := uint64(now.Sub(at) / r.period)
	r.grid += 1 + skipped
	r.tick++
	dt := float64(r.period.Milliseconds()) * float64(1+skipped)
	if r.tick == 1 {
		dt = float64(r.period.Milliseconds())
	}
	r.fields.RawSetString("tick", lua.LNumber(r.tick))
	r.fields.RawSetString("dt", lua.LNumber(dt))
	inputs, answers := vm.takeInputs()
	r.m.Inputs(inputs.Len())
	err, cause := vm.runTick(now, inputs)
	if err == nil {
		if err = vm.walkVersion(r.tick); err != nil {
			cause = "state"
		}
	}
	for _, a := range answers {
		vm.respondInput(a.in, err)
	}
	if err != nil {
		r.m.TickError(cause)
		r.failed++
		if r.cfg.OnTickError != "continue" || r.failed >= 5*r.cfg.TickHz {
			vm.closeRoom("error", err.Message)
		}
	} else {
		r.failed = 0
		vm.syncAll()
	}
	r.m.Tick(now.Sub(at), time.Since(now), int(skipped))
	r.publish()
	vm.expireSeats(now)
	if r.cfg.IdleClose > 0 && len(r.members) == 0 && len(r.reservations) == 0 && now.Sub(r.idleSince) >= r.cfg.IdleClose {
		vm.closeRoom("idle", "")
	}
	vm.graceOver(now)
	for _, m := range r.members {
		if !m.live && now.After(m.holdTill) {
			r.remove(m) // a seat whose bind never came
			break
		}
	}
	vm.afterRoomRun()
}

// graceOver makes every member suspended for reconnect_grace leave with
// timeout (§5.3): its END is queued and its session bound home while it is
// away, so a resume reads them first.
func (vm *VM) graceOver(now time.Time) {
	r := vm.room
	for i := 0; i < len(r.members); i++ {
		m := r.members[i]
		if m.live && !m.leaving && m.suspended && now.Sub(m.suspendedAt) >= r.cfg.ReconnectGrace {
			vm.leave(m, "timeout", "", true)
			i-- // leave removed it
		}
	}
}

// tickLabel is a tick's task in its incident line (§10.2).
func tickLabel(id string, tick uint64) string {
	return "room_tick " + id + " tick " + strconv.FormatUint(tick, 10)
}

// runTick runs room_tick(ctx, tick, inputs) under tick_budget: it may not
// suspend (VM.running refuses), so it is over when start returns.
// A failure's cause is shield_room_tick_errors_total's: raised, budget
// or heap.
func (vm *VM) runTick(now time.Time, inputs *lua.LTable) (*codes.Error, string) {
	r := vm.room
	fn := vm.hooks["room_tick"]
	if fn == nil {
		return nil, ""
	}
	var out *codes.Error
	done := false
	t := &task{what: tickLabel(r.id, r.tick), deadline: now.Add(r.cfg.TickBudget), noSuspend: true}
	t.onDone = func(_ []lua.LValue, err *codes.Error) { out, done = err, true }
	vm.start(t, fn, vm.ctx, lua.LNumber(r.tick), inputs)
	if !done {
		// Suspended all the same (a yield the check could not see):
		// stop it, as a tick that ran past its budget.
		t.cause = "budget"
		vm.finish(t, nil, codes.New(codes.HandlerFailed, "room_tick suspended"))
	}
	if out == nil {
		return nil, ""
	}
	if t.cause == "" {
		return out, "raised"
	}
	return out, t.cause
}

// takeInputs builds room_tick's inputs (§6) from every member's queue, in
// the order the room took them, and empties the queues.
func (vm *VM) takeInputs() (*lua.LTable, []pendingInput) {
	r := vm.room
	var all []roomInput
	for _, m := range r.members {
		all = append(all, m.inputs...)
		m.inputs = m.inputs[:0]
	}
	// Arrival order across members: each input's seq is per member, so
	// order by when the room took them.
	slices.SortFunc(all, func(a, b roomInput) int { return cmp.Compare(a.order, b.order) })
	t := vm.l.CreateTable(len(all), 0)
	for _, in := range all {
		e := vm.l.CreateTable(0, 7)
		e.RawSetString("player_id", lua.LString(in.m.playerID))
		e.RawSetString("ref", vm.refTable(in.m.ref))
		e.RawSetString("route", lua.LString(in.route))
		e.RawSetString("route_id", lua.LNumber(in.routeID))
		e.RawSetString("body", in.body)
		e.RawSetString("at", lua.LNumber(in.at.UnixMilli()))
		e.RawSetString("seq", lua.LNumber(in.seq))
		t.Append(e)
	}
	_ = codec.MarkArray(vm.l, t)
	answers := r.answers
	r.answers = nil
	return t, answers
}

// roomIngress takes a member's frame on a room_input route (§6): decoded
// now, queued for the next tick. It reports false for any other route.
func (vm *VM) roomIngress(t *task, in *ingress.ClientIngress, h *handler) bool {
	if !h.route.RoomInput {
		return false
	}
	r := vm.room
	c := &in.Client
	m := r.member(c.Ref.PlayerID)
	if m == nil || !m.live || m.leaving || m.ref.SessionID != c.Ref.SessionID || m.ref.Epoch != c.Ref.Epoch {
		if m == nil || m.ref.SessionID != c.Ref.SessionID {
			r.m.InputsDropped("not_member", 1)
		} else {
			r.m.InputsDropped("stale", 1)
		}
		vm.finish(t, nil, codes.New(codes.EpochExpired, "session %d is not a member of room %s at epoch %d", c.Ref.SessionID, r.id, c.Ref.Epoch))
		return true
	}
	m.seq++
	if len(m.inputs) >= r.cfg.InputQueue {
		m.dropped++
		r.m.InputsDropped("queue_full", 1)
		vm.finish(t, nil, codes.New(codes.Busy, "room input queue full (room.input_queue %d)", r.cfg.InputQueue))
		return true
	}
	req, err := vm.decodeRequest(in, h)
	if err != nil {
		if err.Code == codes.SchemaViolation {
			r.m.InputsDropped("schema_violation", 1)
		} else {
			r.m.InputsDropped("decode_failed", 1)
		}
		vm.finish(t, nil, err)
		return true
	}
	m.inputs = append(m.inputs, roomInput{m: m, route: c.Route, routeID: c.RouteID, body: req, at: in.Received, seq: m.seq, order: r.nextOrder()})
	if in.Notify() {
		vm.finish(t, nil, nil)
		return true
	}
	// A request is answered once its tick returned: the frame stays the
	// room's until then.
	t.done = true
	r.answers = append(r.answers, pendingInput{in: in})
	return true
}

// respondInput answers an input request with an empty body, or with its
// tick's error.
func (vm *VM) respondInput(in *ingress.ClientIngress, err *codes.Error) {
	if s := vm.sink(); s != nil {
		s.Respond(in.Answer(vm.service, nil, err))
	}
	in.Release()
}

// walkVersion reads room.state into the tree of version v and keeps its
// change set (§7.1, §7.2).
func (vm *VM) walkVersion(v uint64) *codes.Error {
	r := vm.room
	st, _ := r.fields.RawGetString("state").(*lua.LTable)
	if st == nil {
		st = vm.l.NewTable()
	}
	tree, err := walkState(st, r.cfg.MaxStateValues, vm.shield.RawGetString("null"))
	if err != nil {
		if v == 0 { // room_init's: the create fails, and its caller is a VM
			return vm.classify(&task{what: "room_init " + r.id}, err)
		}
		// A tick's: its requests and the members' END quote the incident.
		return vm.classify(&task{what: tickLabel(r.id, v), noSuspend: true}, err)
	}
	changes, derr := statesync.Diff(r.tree, tree)
	if derr != nil {
		return codes.New(codes.HandlerFailed, "room state: %v", derr)
	}
	// The versions of failed ticks in between changed nothing: their
	// empty change sets keep history[i] the change set of one version,
	// which sendGroup counts on (at most 5 × tick_hz of them:
	// on_tick_error closes the room then).
	for gap := r.version + 1; gap < v; gap++ {
		r.history = append(r.history, nil)
	}
	r.tree, r.version = tree, v
	r.history = append(r.history, changes)
	if len(r.history) > r.cfg.History {
		r.history = r.history[len(r.history)-r.cfg.History:]
	}
	return nil
}

// endPush is a member's END frame (§8.2) as a push to ref alone; a
// refusal leaves nothing to do (the session is gone or full).
func (vm *VM) endPush(ref egress.ClientRef, reason, msg string) *egress.Push {
	body := statesync.AppendEnd(nil, reason, msg, vm.room.cfg.MaxFrameBytes)
	return &egress.Push{RouteID: descriptor.RouteRoomState, Bodies: vm.binaryBodies(body), Targets: []egress.ClientRef{ref}}
}

// binaryBodies is a state frame's body under every body codec: the same
// bytes for all (they are not the codec's, §8.1).
func (vm *VM) binaryBodies(body []byte) map[string][]byte {
	keys := vm.spec.PushCodecs
	if len(keys) == 0 {
		keys = []string{codec.JSONName}
	}
	return egress.SameBody(keys, body)
}
