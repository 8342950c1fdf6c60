package acceptance

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

// TestRoomJoinInputsLeave is docs/rooms.md §16 step 4's first end-to-end
// test: a member joins through the shield.room.join route, gets a
// SNAPSHOT, its inputs reach room_tick and come back as deltas, a refused
// join answers the room's code, and shield.room.leave sends END and binds
// the session home, whose client_bound hears from which room.
func TestRoomJoinInputsLeave(t *testing.T) {
	g := startRooms(t, roomsConf{node: "gw-rooms", timeout: 20 * time.Second, strict: true,
		kinds: roomKind("arena", "rooms_arena.lua", "tick_hz: 20", "{id: 3001, name: move, room_input: true}")})
	alice, mallory := g.player("alice"), g.player("mallory")
	var made struct{ Room string }
	if err := alice.c.Call(g.ctx, 2, map[string]string{"name": "pit"}, &made); err != nil {
		t.Fatal(err)
	}
	room := made.Room
	g.join(alice, room)
	err := g.tryJoin(mallory, room, nil)
	if code, _ := codes.CodeOf(err); code != "arena.banned" {
		t.Fatalf("mallory's join: %v, want arena.banned", err)
	}
	if err := alice.c.Call(g.ctx, 65522, map[string]any{"room": "arena/0000000000000000@gw-rooms"}, nil); err == nil {
		t.Fatal("a second join from inside a room succeeded")
	}

	if err := alice.c.Notify(3001, map[string]any{"x": 5}); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "alice's x in her state", func() bool {
		st, _ := alice.state()
		pos, _ := st["pos"].(map[string]any)
		return pos["alice"] == int64(5) && st["name"] == "pit" && st["members"] == int64(1)
	})
	_, ups := alice.state()
	if ups[0].Kind != statesync.SnapshotFrame {
		t.Fatalf("first frame %v, want a SNAPSHOT", ups[0].Kind)
	}

	var left map[string]any
	if err := alice.c.Call(g.ctx, 65523, nil, &left); err != nil {
		t.Fatalf("leave: %v", err)
	}
	wiretest.Eventually(t, "alice's END", func() bool {
		_, ups := alice.state()
		last := ups[len(ups)-1]
		return last.Kind == statesync.EndFrame && last.Reason == "left"
	})
	// Home again: the lobby's routes answer, and its client_bound heard
	// where from.
	if err := alice.c.Call(g.ctx, 2, map[string]string{"name": "again"}, &made); err != nil {
		t.Fatalf("make after the leave: %v", err)
	}
	g.s.Logs.WaitFor(t, "home again", "reason", "left", "room", room)
	g.s.Logs.WaitFor(t, "left room", "reason", "left", "player_id", "alice")
}
