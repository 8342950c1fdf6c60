package service

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/statesync"
)

// roomKind is a service with a room block (docs/rooms.md §1): no VM of
// its own, a spec every room's VM is made from, and the count of live rooms.
type roomKind struct {
	// spec, cfg and mailbox are what new rooms are made from; a reload
	// replaces them under rooms.mu (§2.5).
	spec    luavm.Spec
	cfg     config.Room
	mailbox int
	proto   *luavm.VM // the kind's VM of layer 3, closed: what a reload compares with
	live    int       // guarded by rooms.mu
}

// KindVM is room kind kind's VM of the last start or reload, closed: for
// a reload to tell what changed (luavm.VM.Differs), never to run.
func (rt *Runtime) KindVM(kind string) *luavm.VM {
	rt.rooms.mu.RLock()
	defer rt.rooms.mu.RUnlock()
	if k := rt.rooms.kinds[kind]; k != nil {
		return k.proto
	}
	return nil
}

// reloadKind is a reload of a room kind (§2.5): live rooms keep their
// code and limits; the rooms made from now on get c's. It reports whether
// the kind's code, routes, settings or room block changed (c.VMs).
func (rt *Runtime) reloadKind(k *roomKind, c Change) bool {
	rt.rooms.mu.Lock()
	defer rt.rooms.mu.Unlock()
	k.mailbox = c.Mailbox
	k.spec.HandlerTimeout, k.spec.MaxPending = c.HandlerTimeout, c.MaxPending
	if c.VMs == nil {
		return false
	}
	if c.Kind == nil { // not a kind's change: nothing to make rooms from
		for _, vm := range c.VMs {
			if vm != nil {
				vm.Close()
			}
		}
		return false
	}
	for _, vm := range c.VMs {
		if vm != nil {
			vm.Close() // layer 3 is done
			k.proto = vm
		}
	}
	k.spec, k.cfg = c.Kind.VMs[0], *c.Kind.Room
	return true
}

// rooms are the live rooms of a runtime, by id. A room's actor is
// registered from its create to its close; a lane push to it happens under
// the read lock, so that nothing reaches a room after it closed.
type rooms struct {
	mu    sync.RWMutex
	kinds map[string]*roomKind
	byID  map[string]*actor
	// elsewhere are the room kinds of the config this node does not host
	// (a cluster's node.services): a create places them on another node.
	elsewhere map[string]bool
}

// IsRoomKind reports whether service is a room kind, hosted here or, in a
// cluster, elsewhere.
func (rt *Runtime) IsRoomKind(service string) bool {
	return rt.rooms.kinds[service] != nil || rt.rooms.elsewhere[service]
}

// Rooms lists the live rooms' actors (for /admin/rooms and Stop).
func (rt *Runtime) roomActors() []*actor {
	rt.rooms.mu.RLock()
	defer rt.rooms.mu.RUnlock()
	out := make([]*actor, 0, len(rt.rooms.byID))
	for _, a := range rt.rooms.byID {
		out = append(out, a)
	}
	return out
}

// roomInfo is what a room's actor keeps for /admin/rooms and the gauges.
type roomInfo struct {
	createdAt time.Time
	stats     luavm.RoomStats // written by the room's VM
}

// RoomStatus is one live room, as GET /admin/rooms lists it
// (docs/rooms.md §13).
type RoomStatus struct {
	ID        string
	Kind      string
	Members   int
	Reserved  int
	Tick      uint64
	CreatedAt time.Time
}

// RoomList returns this node's live rooms (of kind, when it is not
// empty), ordered by id, at most limit.
func (rt *Runtime) RoomList(kind string, limit int) []RoomStatus {
	rt.rooms.mu.RLock()
	out := make([]RoomStatus, 0, min(len(rt.rooms.byID), limit))
	for id, a := range rt.rooms.byID {
		if (kind == "" || a.id.Service == kind) && a.room != nil {
			out = append(out, RoomStatus{ID: id, Kind: a.id.Service, Members: int(a.room.stats.Members.Load()),
				Reserved: int(a.room.stats.Reserved.Load()), Tick: a.room.stats.Tick.Load(), CreatedAt: a.room.createdAt})
		}
	}
	rt.rooms.mu.RUnlock()
	slices.SortFunc(out, func(a, b RoomStatus) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)]
}

// RoomKinds lists the room kinds, sorted.
func (rt *Runtime) RoomKinds() []string {
	kinds := make([]string, 0, len(rt.rooms.kinds))
	for k := range rt.rooms.kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// RoomGauges is shield_rooms and shield_room_members of kind: its live
// rooms on this node and their members.
func (rt *Runtime) RoomGauges(kind string) (rooms, members int) {
	rt.rooms.mu.RLock()
	defer rt.rooms.mu.RUnlock()
	for _, a := range rt.rooms.byID {
		if a.id.Service == kind && a.room != nil {
			rooms++
			members += int(a.room.stats.Members.Load())
		}
	}
	return rooms, members
}

// RoomCount is the number of live rooms of a kind on this node.
func (rt *Runtime) RoomCount(kind string) int {
	rt.rooms.mu.RLock()
	defer rt.rooms.mu.RUnlock()
	if k := rt.rooms.kinds[kind]; k != nil {
		return k.live
	}
	return 0
}

func (rt *Runtime) room(id string) *actor {
	rt.rooms.mu.RLock()
	defer rt.rooms.mu.RUnlock()
	return rt.rooms.byID[id]
}

// createRoom is shield.room.create (§4.3) in one process: the room's actor
// is registered at once, and its goroutine loads the VM and runs
// room_init, whose end answers c.
func (rt *Runtime) createRoom(c *luavm.Call) *codes.Error {
	kind := c.To.Service
	k := rt.rooms.kinds[kind]
	if rt.remote != nil && c.Reply == "" && rt.IsRoomKind(kind) {
		// Made here (no Reply) in a cluster: placed by load (§3.2). A
		// create another node placed here has a Reply, and is made here.
		live, limit := 0, 0
		if k != nil {
			rt.rooms.mu.RLock()
			live, limit = k.live, k.cfg.MaxRooms
			rt.rooms.mu.RUnlock()
		}
		node, err := rt.remote.PlaceRoom(kind, live, limit, k != nil && !rt.stopping.Load())
		switch {
		case err != nil:
			return err
		case node != rt.opts.Node:
			return rt.remote.CreateRoom(node, c)
		}
	}
	if k == nil {
		return codes.New(codes.Unavailable, "%q is not a room service", kind)
	}
	if rt.stopping.Load() {
		return codes.New(codes.Unavailable, "node %s is stopping: it makes no rooms", rt.opts.Node)
	}
	id := fmt.Sprintf("%s/%016x@%s", kind, rand.Uint64(), rt.opts.Node)
	rt.rooms.mu.Lock()
	// The kind as it is now: a reload changes it for the rooms made after
	// (§2.5), under this lock.
	spec, cfg, mailbox := k.spec, k.cfg, k.mailbox
	if k.live >= cfg.MaxRooms {
		live := k.live
		rt.rooms.mu.Unlock()
		if spec.Room != nil && spec.Room.Metrics != nil {
			spec.Room.Metrics.Created("refused")
		}
		return codes.New(codes.Busy, "%d rooms of %s are live on node %s (room.max_rooms)", live, kind, rt.opts.Node)
	}
	a := &actor{rt: rt, id: egress.ActorID{Service: kind, Instance: -1, Room: id}, control: newControlQueue(),
		business: newBusinessLane(mailbox), done: make(chan struct{}), isRoom: true, room: &roomInfo{createdAt: time.Now()}}
	a.out.a = a
	k.live++
	rt.rooms.byID[id] = a
	rt.rooms.mu.Unlock()
	var metrics luavm.RoomMetrics
	if spec.Room != nil {
		metrics = spec.Room.Metrics
	}
	spec.Instance = -1 // §3.3: its log lines say instance=-1
	spec.Room = &luavm.RoomSpec{ID: id, Config: cfg, Stats: &a.room.stats, Metrics: metrics}
	go a.roomLoop(spec, c)
	return nil
}

// routeRoom delivers a call or send addressed {room = id}.
func (rt *Runtime) routeRoom(c *luavm.Call) *codes.Error {
	kind, node, ok := luavm.ParseRoomID(c.To.Room)
	if ok && node != rt.opts.Node && rt.remote != nil {
		return rt.remote.Route(egress.ActorID{Service: kind, Instance: -1, Room: c.To.Room}, c)
	}
	if !ok || node != rt.opts.Node {
		return codes.New(codes.RoomNotFound, "no room %q", c.To.Room)
	}
	rt.rooms.mu.RLock()
	defer rt.rooms.mu.RUnlock()
	a := rt.rooms.byID[c.To.Room]
	if a == nil || a.dead.Load() {
		return codes.New(codes.RoomNotFound, "no room %q", c.To.Room)
	}
	return a.enqueue(c)
}

// roomLoop is a room actor's goroutine: it loads the room's VM, runs
// room_init, then serves the room until it closes.
func (a *actor) roomLoop(spec luavm.Spec, c *luavm.Call) {
	vm, err := luavm.New(spec)
	if err != nil {
		a.rt.log.Error("cannot load a room's VM", "service", spec.Service, "room", spec.Room.ID, "error", err)
		a.rt.Return(&luavm.Result{To: c.From, ID: c.ID, Gen: c.Gen, Reply: c.Reply,
			Err: codes.New(codes.Unavailable, "room of %s could not be made", spec.Service)})
		a.endRoom()
		close(a.done)
		return
	}
	a.vm.Store(vm)
	vm.Attach(a)
	a.safely(vm, func(vm *luavm.VM) { vm.RoomInit(c) })
	a.loop()
}

// RoomClosed is the room VM telling its actor it closed (luavm.RoomHost).
func (a *actor) RoomClosed() { a.roomOver = true }

// endRoom unregisters a closed room; from then on its id is
// room_not_found, and what still waits in its lanes is answered so.
func (a *actor) endRoom() {
	rt := a.rt
	rt.rooms.mu.Lock()
	if rt.rooms.byID[a.id.Room] == a {
		delete(rt.rooms.byID, a.id.Room)
		rt.rooms.kinds[a.id.Service].live--
	}
	a.dead.Store(true)
	rt.rooms.mu.Unlock()
	a.drainDead()
}

// roomStep is the room's share of the actor loop: its tick when due, which
// goes before the business lane (§6), and its end once it closed. It
// reports whether the loop should go round again at once, and whether the
// loop is over.
func (a *actor) roomStep() (again, over bool) {
	vm := a.vm.Load()
	if a.roomOver {
		return false, true
	}
	if at, ok := vm.RoomNext(); ok {
		if now := time.Now(); !now.Before(at) {
			a.safely(vm, func(vm *luavm.VM) { vm.RoomTick(now) })
			return true, false
		}
	}
	return false, false
}

// closeRoomNow ends a room at the runtime's stop: members leave with
// room_closed, room_close runs (reason shutdown), the VM closes.
func (a *actor) closeRoomNow() {
	vm := a.vm.Load()
	if vm != nil && !a.dead.Load() && !a.roomOver {
		a.safely(vm, func(vm *luavm.VM) { vm.CloseRoom("shutdown") })
	}
	a.endRoom()
}

// controlRoom puts a session message on a room's control lane, under the
// rooms' read lock. A bind into a room that closed meanwhile sends the
// session back to its return target, with its END (bindBackClosed):
// nothing would ever do either otherwise.
func (rt *Runtime) controlRoom(target egress.ActorID, m any) {
	rt.rooms.mu.RLock()
	a := rt.rooms.byID[target.Room]
	if a != nil && !a.dead.Load() {
		a.control.push(m)
		rt.rooms.mu.RUnlock()
		return
	}
	rt.rooms.mu.RUnlock()
	if b, ok := m.(*ingress.Bound); ok {
		rt.bindBackClosed(target, b)
	}
}

// bindBackClosed binds b's session, which a join bound to room after the
// room closed, back to its return target with leave reason room_closed,
// and END (reason room_closed) queued by that bind (egress.BindRequest.
// Then, docs/rooms.md §5.2), as the room's own leave would
// (luavm's bindBack): a client's join then ends at once, home again,
// instead of waiting for a SNAPSHOT. END is built from the kind as it is
// now (its push codecs, room.max_frame_bytes).
//
// The bind back runs on a goroutine of its own: controlRoom is called
// from the gateway's Bound hook, under the session registry's lock and the
// session's, which a bind takes again; and the binding that Bound
// announces is published only once the hook has returned. The bind back
// waits for those locks, then finds that binding (its epoch, the room as
// its target) and moves it home.
func (rt *Runtime) bindBackClosed(room egress.ActorID, b *ingress.Bound) {
	sink := rt.Sink()
	if sink == nil || b.Return.IsZero() {
		return
	}
	limit := 0
	var metrics luavm.RoomMetrics
	rt.rooms.mu.RLock()
	if k := rt.rooms.kinds[room.Service]; k != nil {
		limit = k.cfg.MaxFrameBytes
		if k.spec.Room != nil {
			metrics = k.spec.Room.Metrics
		}
	}
	rt.rooms.mu.RUnlock()
	body := statesync.AppendEnd(nil, "room_closed", "", limit)
	req := &egress.BindRequest{Ref: b.Ref, PlayerID: b.Ref.PlayerID, Target: b.Return, Caller: room, Left: "room_closed",
		Then: &egress.Push{RouteID: descriptor.RouteRoomState, Bodies: egress.SameBody(rt.pushCodecs(room.Service), body),
			Targets: []egress.ClientRef{b.Ref}}}
	go sink.Bind(req, func(_ egress.ClientRef, err *codes.Error) {
		// The session closed, or was kicked, meanwhile: nothing to undo.
		switch {
		case metrics == nil:
		case err == nil:
			metrics.StateFrames(luavm.FrameEnd, 1, len(body)) // queued with the bind
		default:
			metrics.StateRejected(err.Code.Reason(), 1)
		}
	})
}
