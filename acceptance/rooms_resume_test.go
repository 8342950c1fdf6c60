package acceptance

import (
	"testing"

	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

// TestResumeDelta is docs/rooms.md §5.3 and §7.5: a member whose
// connection drops is suspended and stays a member (room_suspended, with
// member.suspended true), gets no state while away, and once resumed
// (room_resumed) catches up by one DELTA from the base it had, which
// carries what changed meanwhile. A shield.room.sync {} then gets a
// SNAPSHOT.
func TestResumeDelta(t *testing.T) {
	// history 1024: the room's empty keep-alive deltas (every history/2
	// versions) never fall inside the test.
	g := startRoomsRig(t, "resume_window: 5s", "tick_hz: 20, history: 1024, reconnect_grace: 5s", "quiet")
	alice, bob := g.member("alice"), g.member("bob")
	if err := bob.c.Notify(3001, map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "alice sees bob's x", func() bool {
		st, _ := alice.state()
		pos, _ := st["pos"].(map[string]any)
		return pos["bob"] == int64(1)
	})
	base, _ := alice.version()
	g.drop(alice)
	_, before := alice.state()
	if err := bob.c.Notify(3001, map[string]any{"x": 7}); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "bob sees his own x", func() bool {
		st, _ := bob.state()
		pos, _ := st["pos"].(map[string]any)
		return pos["bob"] == int64(7)
	})
	if n := len(alice.since(len(before))); n != 0 {
		t.Fatalf("alice got %d frames while suspended", n)
	}
	g.resume(alice)
	g.s.Logs.WaitFor(t, "room_resumed", "player_id", "alice", "suspended", "false")
	wiretest.Eventually(t, "alice catches up", func() bool {
		st, _ := alice.state()
		pos, _ := st["pos"].(map[string]any)
		return pos["bob"] == int64(7)
	})
	ups := alice.since(len(before))
	if ups[0].Kind != statesync.DeltaFrame || ups[0].Status != statesync.Applied {
		t.Fatalf("first frame after the resume: %+v, want a DELTA from %d that applies", ups[0], base)
	}
	if g.s.Logs.Count("room_leave", "player_id", "alice") != 0 {
		t.Fatal("alice left the room on a resume")
	}

	n := len(alice.since(0))
	if err := alice.c.Call(g.ctx, 65521, map[string]any{}, nil); err != nil {
		t.Fatalf("sync: %v", err)
	}
	wiretest.Eventually(t, "the sync's snapshot", func() bool {
		for _, u := range alice.since(n) {
			if u.Kind == statesync.SnapshotFrame && u.Status == statesync.Applied {
				return true
			}
		}
		return false
	})
}

// TestResumeSnapshot is §7.5's other case: a member away for more
// versions than room.history gets a SNAPSHOT at its resume, not a delta.
func TestResumeSnapshot(t *testing.T) {
	g := startRoomsRig(t, "resume_window: 5s", "tick_hz: 20, history: 4, reconnect_grace: 5s", "ticking")
	alice, bob := g.member("alice"), g.member("bob")
	g.drop(alice)
	v, _ := alice.version()
	_, before := alice.state()
	// Away for more than 4 versions (200 ms at 20 Hz): bob, still there,
	// shows the room's version.
	wiretest.Eventually(t, "the room 8 versions on", func() bool {
		now, _ := bob.version()
		return now > v+8
	})
	g.resume(alice)
	wiretest.Eventually(t, "alice's snapshot", func() bool {
		for _, u := range alice.since(len(before)) {
			if u.Kind == statesync.DeltaFrame && u.Status == statesync.Applied {
				t.Fatalf("a DELTA %+v applied after missing more than the history", u)
			}
			if u.Kind == statesync.SnapshotFrame && u.Status == statesync.Applied {
				return u.Version > v+4
			}
		}
		return false
	})
	st, _ := alice.state()
	if ver, _ := alice.version(); st["t"] != int64(ver) {
		t.Fatalf("state t %v at version %d", st["t"], ver)
	}
}

// TestResumeKeepsToken is §5.3's grace: a member suspended past
// room.reconnect_grace leaves with timeout while it is away; its END is
// queued and its session bound home (home's client_bound hears from
// where), and the bind, of a suspended session, keeps the resume token
// the absent client holds: the resume succeeds, END is read first, and
// home's routes answer.
func TestResumeKeepsToken(t *testing.T) {
	g := startRoomsRig(t, "resume_window: 10s", "tick_hz: 20, reconnect_grace: 300ms", "quiet")
	alice := g.member("alice")
	g.drop(alice)
	g.s.Logs.WaitFor(t, "room_leave", "player_id", "alice", "reason", "timeout")
	g.s.Logs.WaitFor(t, "home again", "player_id", "alice", "reason", "timeout", "room", g.room)
	n := len(alice.since(0))
	g.resume(alice)
	wiretest.Eventually(t, "alice's END", func() bool {
		for _, u := range alice.since(n) {
			if u.Kind == statesync.EndFrame {
				return u.Reason == "timeout"
			}
		}
		return false
	})
	var made struct{ Room string }
	if err := alice.c.Call(g.ctx, 2, map[string]string{"name": "next"}, &made); err != nil || made.Room == "" {
		t.Fatalf("home's route after the resume: %+v %v", made, err)
	}
}

// TestLeaveReasons is §5.2: each way out of a room gives room_leave its
// reason, and every one but a closed session's pushes END with it and
// binds the session home, whose client_bound hears the room and reason.
func TestLeaveReasons(t *testing.T) {
	cases := []struct {
		name, session, reason, message string
		leave                          func(g *roomsRig, m *resumable)
	}{
		{"shield.room.leave", "resume_window: 0s", "left", "", func(g *roomsRig, m *resumable) {
			if err := m.c.Call(g.ctx, 65523, nil, nil); err != nil {
				t.Errorf("leave: %v", err)
			}
		}},
		{"room:remove", "resume_window: 0s", "removed", "asked to go", func(g *roomsRig, m *resumable) {
			var out struct{ Removed bool }
			if err := m.c.Call(g.ctx, 3002, map[string]any{}, &out); err != nil || !out.Removed {
				t.Errorf("out: %+v %v", out, err)
			}
		}},
		{"grace", "resume_window: 10s", "timeout", "", func(g *roomsRig, m *resumable) { g.drop(m) }},
		{"disconnect", "resume_window: 0s", "closed", "", func(g *roomsRig, m *resumable) { m.c.Close() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := startRoomsRig(t, tc.session, "tick_hz: 20, reconnect_grace: 200ms", "quiet")
			alice := g.member("alice")
			tc.leave(g, alice)
			g.s.Logs.WaitFor(t, "room_leave", "player_id", "alice", "reason", tc.reason)
			if tc.reason == "closed" {
				return // a closed session is not bound anywhere
			}
			g.s.Logs.WaitFor(t, "home again", "player_id", "alice", "reason", tc.reason, "room", g.room)
			if tc.reason == "timeout" {
				g.resume(alice)
			}
			wiretest.Eventually(t, "alice's END", func() bool {
				ups := alice.since(0)
				last := ups[len(ups)-1]
				return last.Kind == statesync.EndFrame && last.Reason == tc.reason && last.Message == tc.message
			})
			if n := g.s.Logs.Count("room_leave", "player_id", "alice"); n != 1 {
				t.Fatalf("room_leave ran %d times, want once", n)
			}
		})
	}
}
