package acceptance

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/session"
	"github.com/shieldrpc/shield/statesync"
)

// TestClientRoom is the Go SDK's client.Room (docs/clients.md "Rooms",
// docs/rooms.md §8.3): Join returns once the SNAPSHOT is there, inputs
// come back as applied versions, a refusal is the room's code, the state
// survives a resume and catches up, Leave returns once END came, and the
// session is home at once. A new session after a failed resume is in no
// room.
func TestClientRoom(t *testing.T) {
	g := startRooms(t, roomsConf{node: "gw-sdk", session: "resume_window: 5s", timeout: 20 * time.Second,
		kinds: roomKind("arena", "rooms_arena.lua", "tick_hz: 20, reconnect_grace: 5s", "{id: 3001, name: move, room_input: true}")})
	c, net := g.dial()
	resumed := make(chan client.ReconnectInfo, 4)
	c.OnReconnect(func(i client.ReconnectInfo) { resumed <- i })
	r := c.Room()
	var applied atomic.Int64
	r.OnUpdate(func(u statesync.Update) {
		if u.Status == statesync.Applied {
			applied.Add(1)
		}
	})
	g.login(c, "alice")
	room := g.makeOn(c, "arena", map[string]string{"name": "pit"})
	if err := r.Join(g.ctx, room, nil); err != nil {
		t.Fatal(err)
	}
	name := func() (n any) {
		r.State(func(st map[string]any, _ uint64, _ bool) { n = st["name"] })
		return n
	}
	if !r.In() || r.ID() != room || r.TickHz() != 20 || name() != "pit" {
		t.Fatalf("after Join: in %v, id %q, tick_hz %d, name %v", r.In(), r.ID(), r.TickHz(), name())
	}
	x := func() (v any) {
		r.State(func(st map[string]any, _ uint64, _ bool) {
			pos, _ := st["pos"].(map[string]any)
			v = pos["alice"]
		})
		return v
	}
	if err := c.Notify(3001, map[string]any{"x": 5}); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "the input in the state", func() bool { return x() == int64(5) })

	mallory := g.player("mallory")
	if err := mallory.c.Room().Join(g.ctx, room, nil); !codeIs(err, "arena.banned") {
		t.Fatalf("mallory's Join: %v, want arena.banned", err)
	}

	// A resume: still in, and what changed meanwhile arrives.
	net.Cut()
	select {
	case i := <-resumed:
		if !i.Resumed {
			t.Fatalf("the reconnect did not resume: %s", i.Message)
		}
	case <-g.ctx.Done():
		t.Fatal("no reconnect")
	}
	if err := c.Notify(3001, map[string]any{"x": 6}); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "the input after the resume", func() bool { return x() == int64(6) && r.In() })

	if err := r.Leave(g.ctx); err != nil {
		t.Fatal(err)
	}
	if reason, _, ok := r.End(); !ok || reason != "left" || r.In() {
		t.Fatalf("after Leave: End %q %v, In %v", reason, ok, r.In())
	}
	var home struct{ Home bool }
	if err := c.Call(g.ctx, roomsPing, nil, &home); err != nil || !home.Home {
		t.Fatalf("a lobby call right after Leave: %+v %v", home, err)
	}
	if applied.Load() < 3 {
		t.Fatalf("OnUpdate saw %d applied versions, want the SNAPSHOT and two inputs' at least", applied.Load())
	}

	// In a room again, then a new session: the Room forgets the room.
	if err := r.Join(g.ctx, room, nil); err != nil {
		t.Fatal(err)
	}
	net.Refusing.Store(true)
	net.Cut()
	time.Sleep(100 * time.Millisecond)
	g.s.Srv.Gateway.Sessions().Player("alice").Close(session.Kicked, nil) // the suspended session ends: no resume
	net.Refusing.Store(false)
	select {
	case i := <-resumed:
		if i.Resumed {
			t.Fatal("a closed session resumed")
		}
	case <-g.ctx.Done():
		t.Fatal("no reconnect")
	}
	if reason, _, ok := r.End(); r.In() || !ok || reason != "closed" {
		t.Fatalf("after a new session: In %v, End %q %v", r.In(), reason, ok)
	}
}

// codeIs reports whether err is a *codes.Error of code.
func codeIs(err error, code codes.Code) bool {
	got, ok := codes.CodeOf(err)
	return ok && got == code
}

// TestClientRoomLegacy: on the legacy envelopes a state frame is a JSON
// string of its base64 (docs/protocol.md §13); the Go SDK's Room decodes
// it, on delimiter and lenprefix alike.
func TestClientRoomLegacy(t *testing.T) {
	for _, env := range []string{"delimiter", "lenprefix"} {
		t.Run(env, func(t *testing.T) {
			g := startRooms(t, roomsConf{node: "gw-sdk-" + env, listener: "protocol: {envelope: " + env + ", body: json}",
				timeout: 20 * time.Second, kinds: roomKind("arena", "rooms_arena.lua", "tick_hz: 20", "{id: 3001, name: move, room_input: true}")})
			c := g.dialPlain(client.Options{Envelope: env})
			r := c.Room()
			g.login(c, "alice")
			room := g.makeOn(c, "arena", map[string]string{"name": "pit"})
			if err := r.Join(g.ctx, room, nil); err != nil {
				t.Fatal(err)
			}
			if err := c.Notify(3001, map[string]any{"x": 9}); err != nil {
				t.Fatal(err)
			}
			wiretest.Eventually(t, "the input in the state", func() bool {
				var x any
				r.State(func(st map[string]any, _ uint64, _ bool) {
					pos, _ := st["pos"].(map[string]any)
					x = pos["alice"]
				})
				return x == int64(9)
			})
			if err := r.Leave(g.ctx); err != nil {
				t.Fatal(err)
			}
			if reason, _, _ := r.End(); reason != "left" {
				t.Fatalf("END %q, want left", reason)
			}
		})
	}
}
