package acceptance

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

const roomsYAML = `node: {name: gw-rooms}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: lobby}
log: {format: json, level: info}
actors:
  - name: lobby
    script: %s
    rpc:
      routes:
        - {id: 1, name: login, binding: login, requires_auth: false}
        - {id: 2, name: make, binding: make}
  - name: arena
    script: %s
    room: {tick_hz: 20}
    rpc:
      routes:
        - {id: 3001, name: move, room_input: true}
`

// roomMember is a logged-in client that tracks its room's state.
type roomMember struct {
	c  *client.Client
	mu sync.Mutex
	tr statesync.Tracker
	up []statesync.Update
}

func (m *roomMember) state() (map[string]any, []statesync.Update) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return statesync.Clone(m.tr.State()), append([]statesync.Update(nil), m.up...)
}

// TestRoomJoinInputsLeave is docs/rooms.md §16 step 4's first end-to-end
// test: a member joins through the shield.room.join route, gets a
// SNAPSHOT, its inputs reach room_tick and come back as deltas, a refused
// join answers the room's code, and shield.room.leave sends END and binds
// the session home, whose client_bound hears from which room.
func TestRoomJoinInputsLeave(t *testing.T) {
	lobby, _ := filepath.Abs("testdata/rooms_lobby.lua")
	arena, _ := filepath.Abs("testdata/rooms_arena.lua")
	s := wiretest.Start(t, "shield.yaml", fmt.Sprintf(roomsYAML, lobby, arena), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	login := func(user string) *roomMember {
		c, err := client.Dial(ctx, s.Addr("game"), client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		m := &roomMember{c: c}
		c.OnPush(65520, func(body []byte) {
			m.mu.Lock()
			defer m.mu.Unlock()
			u, err := m.tr.Receive(body)
			if err != nil {
				t.Errorf("%s: state frame: %v", user, err)
			}
			m.up = append(m.up, u)
		})
		if err := c.Call(ctx, 1, map[string]string{"user": user}, nil); err != nil {
			t.Fatal(err)
		}
		return m
	}
	alice, mallory := login("alice"), login("mallory")
	var made struct{ Room string }
	if err := alice.c.Call(ctx, 2, map[string]string{"name": "pit"}, &made); err != nil {
		t.Fatal(err)
	}
	var joined struct{ Room string }
	if err := alice.c.Call(ctx, 65522, map[string]any{"room": made.Room}, &joined); err != nil || joined.Room != made.Room {
		t.Fatalf("join: %+v %v", joined, err)
	}
	err := mallory.c.Call(ctx, 65522, map[string]any{"room": made.Room}, nil)
	if code, _ := codes.CodeOf(err); code != "arena.banned" {
		t.Fatalf("mallory's join: %v, want arena.banned", err)
	}
	if err := alice.c.Call(ctx, 65522, map[string]any{"room": "arena/0000000000000000@gw-rooms"}, nil); err == nil {
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
	if err := alice.c.Call(ctx, 65523, nil, &left); err != nil {
		t.Fatalf("leave: %v", err)
	}
	wiretest.Eventually(t, "alice's END", func() bool {
		_, ups := alice.state()
		last := ups[len(ups)-1]
		return last.Kind == statesync.EndFrame && last.Reason == "left"
	})
	// Home again: the lobby's routes answer, and its client_bound heard
	// where from.
	if err := alice.c.Call(ctx, 2, map[string]string{"name": "again"}, &made); err != nil {
		t.Fatalf("make after the leave: %v", err)
	}
	s.Logs.WaitFor(t, "home again", "reason", "left", "room", joined.Room)
	s.Logs.WaitFor(t, "left room", "reason", "left", "player_id", "alice")
}
