package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/shieldrpc/shield/statesync"
)

// The reserved room routes (docs/rooms.md §8.1).
const (
	RouteRoomState = 65520 // s2c: a state frame
	RouteRoomSync  = 65521 // c2s notify: {"version":N}
	RouteRoomJoin  = 65522 // c2s request: {"room":id,"meta":...}
	RouteRoomLeave = 65523 // c2s request: {}
	RouteMatch     = 65524 // s2c: a matchmaking event, {"event":"matched","room":id,"token":...} or "expired"
)

// Room is the client's side of its session's room (docs/rooms.md §8.3):
// it takes every shield.room.state push, keeps the state and its version
// (statesync.Tracker), asks for a sync on a gap (at most one a second),
// and tells the app each update. A session is in at most one room at a
// time; the same Room follows it from room to room. Its methods are safe
// for concurrent use.
//
// A Room takes over the route: OnPush(RouteRoomState, ...) afterwards
// replaces it.
type Room struct {
	c *Client

	mu       sync.Mutex
	tr       statesync.Tracker
	in       bool // a SNAPSHOT applied, no END since
	end      statesync.Update
	ends     int       // ENDs taken
	lastSync time.Time // the last shield.room.sync sent
	onUpdate func(statesync.Update)
	changed  chan struct{} // closed and replaced at every update
}

// Room returns the client's Room, setting it up on the first call: call
// it before the session may be joined to a room (a lobby handler that
// joins it with shield.room.join included), or the SNAPSHOT is missed.
func (c *Client) Room() *Room {
	c.mu.Lock()
	r := c.room
	if r == nil {
		r = &Room{c: c, changed: make(chan struct{})}
		c.room = r
		c.pushes[RouteRoomState] = r.receive
	}
	c.mu.Unlock()
	return r
}

// OnUpdate sets the handler of what each state frame did: an applied
// version (its ops, one change event each), a part, a gap, or END. It runs
// on the read loop, after the state changed: keep it short, and do not
// Call from it.
func (r *Room) OnUpdate(fn func(statesync.Update)) {
	r.mu.Lock()
	r.onUpdate = fn
	r.mu.Unlock()
}

// receive is the handler of shield.room.state pushes.
func (r *Room) receive(body []byte) {
	if len(body) > 0 && body[0] == '"' {
		// lenprefix and delimiter: the frame is a JSON string of its
		// standard base64 (docs/protocol.md §13). One that is not is a gap.
		var raw []byte
		if json.Unmarshal(body, &raw) != nil {
			raw = nil
		}
		body = raw
	}
	r.mu.Lock()
	u, _ := r.tr.Receive(body) // a frame that breaks the format is a gap: u says so
	switch u.Status {
	case statesync.Applied:
		r.in = true
	case statesync.Ended:
		r.in, r.end = false, u
		r.ends++
	}
	var sync []byte
	if u.Sync && time.Since(r.lastSync) >= time.Second {
		r.lastSync, sync = time.Now(), r.tr.SyncBody()
	}
	fn := r.onUpdate
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	if sync != nil {
		_ = r.c.Notify(RouteRoomSync, sync) // lost while reconnecting: the next gap asks again
	}
	if fn != nil {
		fn(u)
	}
}

// sessionLost forgets the room of a session that was not resumed: the
// gateway closed it, so its membership ended (reason closed) with no END
// that could reach this client.
func (r *Room) sessionLost() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.in {
		return
	}
	r.tr = statesync.Tracker{}
	r.in, r.end = false, statesync.Update{Status: statesync.Ended, Reason: "closed"}
	r.ends++
	close(r.changed)
	r.changed = make(chan struct{})
}

// In reports whether the session is in a room: a SNAPSHOT applied and no
// END since.
func (r *Room) In() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.in
}

// ID is the room's id (the last SNAPSHOT's), "" before any.
func (r *Room) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tr.RoomID()
}

// TickHz is the room's tick rate, as its last SNAPSHOT said.
func (r *Room) TickHz() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.tr.TickHz())
}

// State calls fn with the state and its version, under the Room's lock:
// read the state inside fn, do not keep or change it. ok is false when
// there is no state (before the first SNAPSHOT, after END).
func (r *Room) State(fn func(state map[string]any, version uint64, ok bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.tr.Version()
	fn(r.tr.State(), v, ok)
}

// End is the last END's reason and message (docs/rooms.md §5.2), and
// false when no END came since the last SNAPSHOT.
func (r *Room) End() (reason, message string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in || r.end.Status != statesync.Ended {
		return "", "", false
	}
	return r.end.Reason, r.end.Message, true
}

// wait blocks until cond holds, checked after every update, or ctx ends.
func (r *Room) wait(ctx context.Context, cond func() bool) error {
	for {
		r.mu.Lock()
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Join sends shield.room.join for room with meta (nil: none), then waits
// for the room's SNAPSHOT: once Join returns the state is there, and
// inputs may go out (§8.3 step 4). The room's refusal comes back as a
// *codes.Error (client_rpc.join_refused, room_full, in_room, a business
// code, ...); a room that ended the membership before its SNAPSHOT was
// applied (it closed meanwhile) as an *EndedError.
func (r *Room) Join(ctx context.Context, room string, meta any) error {
	return r.JoinToken(ctx, room, "", meta)
}

// JoinToken is Join with a reserved seat's token (a matched event's,
// docs/rooms.md §9.3); "" joins without one.
func (r *Room) JoinToken(ctx context.Context, room, token string, meta any) error {
	req := map[string]any{"room": room}
	if token != "" {
		req["token"] = token
	}
	if meta != nil {
		req["meta"] = meta
	}
	r.mu.Lock()
	before := r.ends
	r.mu.Unlock()
	var joined struct{ Room string }
	if err := r.c.Call(ctx, RouteRoomJoin, req, &joined); err != nil {
		return err
	}
	if joined.Room != room {
		return fmt.Errorf("client: the join answered room %q, want %q", joined.Room, room)
	}
	var end *EndedError
	err := r.wait(ctx, func() bool {
		if r.in && r.tr.RoomID() == room {
			return true
		}
		if r.ends > before {
			end = &EndedError{Room: room, Reason: r.end.Reason, Message: r.end.Message}
			return true
		}
		return false
	})
	if err == nil && end != nil {
		return end
	}
	return err
}

// EndedError is a Join whose membership ended (END) before its SNAPSHOT
// was applied: the session is home again.
type EndedError struct {
	Room, Reason, Message string
}

func (e *EndedError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("client: room %s ended the join (%s: %s)", e.Room, e.Reason, e.Message)
	}
	return fmt.Sprintf("client: room %s ended the join (%s)", e.Room, e.Reason)
}

// Leave sends shield.room.leave and waits for END: once Leave returns the
// session is home again, and its calls reach home (§5.2).
func (r *Room) Leave(ctx context.Context) error {
	r.mu.Lock()
	before := r.ends
	r.mu.Unlock()
	if err := r.c.Call(ctx, RouteRoomLeave, nil, nil); err != nil {
		return err
	}
	// END may come before the leave's answer: count, do not order.
	return r.wait(ctx, func() bool { return r.ends > before })
}

// Sync sends shield.room.sync with the version held: the next tick sends
// the changes since, or a SNAPSHOT (§7.5).
func (r *Room) Sync() error {
	r.mu.Lock()
	body := r.tr.SyncBody()
	r.lastSync = time.Now()
	r.mu.Unlock()
	return r.c.Notify(RouteRoomSync, body)
}
