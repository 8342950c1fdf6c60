package acceptance

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
)

// startRefused is the gateway of rooms_join_refused_test.go: the lobby and
// a room kind "door" of max_members maxMembers.
func startRefused(t *testing.T, maxMembers int) *roomsRig {
	return startRooms(t, roomsConf{node: "gw-refused", timeout: 30 * time.Second, kinds: roomKind("door",
		"rooms_refused_door.lua", fmt.Sprintf("tick_hz: 10, max_members: %d", maxMembers))})
}

// makeDoor creates a door room from m's lobby and returns its id.
func (g *roomsRig) makeDoor(m *roomMember, name string) string {
	g.t.Helper()
	return g.makeOn(m.c, "door", map[string]string{"name": name})
}

// refusedErr splits a call's error into its code and message.
func refusedErr(err error) (codes.Code, string) {
	var e *codes.Error
	if errors.As(err, &e) {
		return e.Code, e.Message
	}
	return "", fmt.Sprint(err)
}

// TestJoinRefused is docs/rooms.md §15's "join refused with a reason" and
// in_room rows, through the shield.room.join route (§8.1) against real
// room_join hooks (§4.1, §4.4): room_join returning false with a business
// code and message refuses with that code and message; returning nil,
// nothing, a non-boolean, a bare false, or false with a code that is not
// a business code (a forged client_rpc.* one, or a malformed one)
// refuses with client_rpc.join_refused, and a non-boolean return logs
// "room_join returned <type>: return true to accept"; raising
// shield.error(code, msg) refuses with that code; raising a plain error
// is client_rpc.handler_failed with an incident logged; a malformed id,
// an id of no room (never made, on another node, of another kind, closed)
// is client_rpc.room_not_found, a body without a string room
// client_rpc.decode_failed; every refused join leaves the session home
// and frees its seat (the room has one seat, taken by the join after
// them all); and a join from inside a room is client_rpc.in_room.
func TestJoinRefused(t *testing.T) {
	g := startRefused(t, 1)
	alice := g.player("alice")
	room := g.makeDoor(alice, "front")

	incident := regexp.MustCompile(`^internal error \(incident ([0-9a-f]{16})\)$`)
	cases := []struct {
		verdict string
		code    codes.Code
		msg     string // the message, exactly; "" checks none
		logType string // the type of "room_join returned <type>", "" for none
	}{
		{verdict: "refuse", code: "door.closed", msg: "the door is closed"},
		{verdict: "raise", code: "door.locked", msg: "the door is locked"},
		{verdict: "nil", code: codes.JoinRefused, logType: "nil"},
		// Nothing returned: the forgotten `return true` of §4.1's Why,
		// which the log line is there to point at.
		{verdict: "none", code: codes.JoinRefused, logType: "nil"},
		{verdict: "string", code: codes.JoinRefused, logType: "string"},
		{verdict: "number", code: codes.JoinRefused, logType: "number"},
		{verdict: "table", code: codes.JoinRefused, logType: "table"},
		{verdict: "refuse_bare", code: codes.JoinRefused},
		{verdict: "refuse_system", code: codes.JoinRefused},
		{verdict: "refuse_badcode", code: codes.JoinRefused},
		{verdict: "plain", code: codes.HandlerFailed},
	}
	for _, c := range cases {
		t.Run(c.verdict, func(t *testing.T) {
			g := g.on(t)
			before := 0
			logMsg := "room_join returned " + c.logType + ": return true to accept"
			if c.logType != "" {
				before = g.s.Logs.Count(logMsg, "room", room)
			}
			err := g.tryJoin(alice, room, map[string]string{"verdict": c.verdict})
			code, msg := refusedErr(err)
			if code != c.code {
				t.Fatalf("room_join %s: the join got %v, want %s", c.verdict, err, c.code)
			}
			if c.msg != "" && msg != c.msg {
				t.Errorf("room_join %s: message %q, want %q", c.verdict, msg, c.msg)
			}
			if c.logType != "" {
				// The room logs before it answers the join.
				if n := g.s.Logs.Count(logMsg, "room", room); n != before+1 {
					t.Errorf("room_join %s: %d lines %q for the room, want %d", c.verdict, n, logMsg, before+1)
				}
			}
			if c.code == codes.HandlerFailed {
				m := incident.FindStringSubmatch(msg)
				if m == nil {
					t.Fatalf("a raising room_join: message %q, want internal error (incident <16 hex>)", msg)
				}
				i := g.s.Logs.WaitFor(t, "handler failed", "incident", m[1], "task", "room_join "+room)
				if e := g.s.Logs.Entry(i); !strings.Contains(e.Attrs["error"], "kaboom") {
					t.Errorf("the incident line's error %q does not say kaboom", e.Attrs["error"])
				}
			}
			g.expectHome(alice, "a refused join")
		})
	}
	if n := g.s.Logs.Count("room_join ran", "player_id", "alice"); n != len(cases) {
		t.Errorf("room_join ran %d times for %d joins", n, len(cases))
	}

	t.Run("no such room", func(t *testing.T) {
		g := g.on(t)
		closed := g.makeDoor(alice, "closed")
		if err := alice.c.Call(g.ctx, roomsAsk, map[string]string{"room": closed, "method": "shut"}, nil); err != nil {
			t.Fatalf("closing a room: %v", err)
		}
		_, rest, _ := strings.Cut(room, "/")
		hex := rest[:16]
		for _, id := range []string{
			"",
			"door",
			"door/",
			"door/" + hex,
			"door/" + hex + "@",
			"door/" + strings.ToUpper(hex) + "@gw-refused",
			"door/" + hex[:15] + "@gw-refused",
			"door/0123456789abcdef@gw-refused",
			"nokind/" + hex + "@gw-refused",
			"lobby/" + hex + "@gw-refused",
			"door/" + hex + "@gw-elsewhere",
			"door/" + hex + "@gw-refused ",
			closed,
		} {
			if code, _ := refusedErr(g.tryJoin(alice, id, nil)); code != codes.RoomNotFound {
				t.Errorf("join %q: %q, want %s", id, code, codes.RoomNotFound)
			}
		}
		for _, body := range []any{map[string]any{"room": 5}, map[string]any{}, []string{room}, "door"} {
			err := alice.c.Call(g.ctx, roomsJoin, body, nil)
			if code, _ := refusedErr(err); code != codes.DecodeFailed {
				t.Errorf("join body %v: %v, want %s", body, err, codes.DecodeFailed)
			}
		}
		g.expectHome(alice, "joins of no room")
	})

	// The one seat was freed by every refusal: this join takes it.
	other := g.makeDoor(alice, "side")
	if err := g.tryJoin(alice, room, map[string]string{"verdict": "accept"}); err != nil {
		t.Fatalf("the join after the refusals: %v", err)
	}
	t.Run("in room", func(t *testing.T) {
		for _, id := range []string{room, other, "door/0123456789abcdef@gw-refused"} {
			if code, _ := refusedErr(g.tryJoin(alice, id, map[string]string{"verdict": "accept"})); code != codes.InRoom {
				t.Errorf("join %s from inside %s: %q, want %s", id, room, code, codes.InRoom)
			}
		}
		if n := g.s.Logs.Count("room_join ran", "player_id", "alice"); n != len(cases)+1 {
			t.Errorf("room_join ran for a join from inside a room (%d runs, want %d)", n, len(cases)+1)
		}
	})
	// Still a member: the leave answers, and the session is home again.
	g.leave(alice)
	g.s.Logs.WaitFor(t, "left door", "player_id", "alice", "reason", "left")
	g.expectHome(alice, "the leave's END (§8.3 step 3: the session is home again)")
}

// TestRoomFull is docs/rooms.md §15's "full" row (§4.4, §12 Bounds): in a
// room of max_members 2, a join while both seats are taken is
// client_rpc.room_full without running room_join, whether the seats are
// members or a join still in its room_join (its seat held); once a
// member leaves, by shield.room.leave or by closing its connection, a new
// join takes the seat.
func TestRoomFull(t *testing.T) {
	g := startRefused(t, 2)
	alice, bob, carol, dave := g.player("alice"), g.player("bob"), g.player("carol"), g.player("dave")
	room := g.makeDoor(alice, "pair")
	if err := g.tryJoin(alice, room, nil); err != nil {
		t.Fatalf("alice's join: %v", err)
	}

	// Bob's join waits in room_join, holding the second seat.
	held := make(chan error, 1)
	go func() { held <- g.tryJoin(bob, room, map[string]string{"verdict": "held"}) }()
	g.s.Logs.WaitFor(t, "room_join ran", "player_id", "bob", "verdict", "held")
	err := g.tryJoin(carol, room, nil)
	if code, _ := refusedErr(err); code != codes.RoomFull {
		t.Fatalf("carol's join beside a held seat: %v, want %s", err, codes.RoomFull)
	}
	// A member's frames go to the room (§1): the lobby's route is not
	// there. Release through dave's lobby instead.
	if code, _ := refusedErr(alice.c.Call(g.ctx, roomsAsk, map[string]string{"room": room, "method": "release"}, nil)); code != codes.HandlerMissing {
		t.Fatalf("alice, a member, called a lobby route: %q, want %s", code, codes.HandlerMissing)
	}
	if err := dave.c.Call(g.ctx, roomsAsk, map[string]string{"room": room, "method": "release"}, nil); err != nil {
		t.Fatalf("release: %v", err)
	}
	select {
	case err := <-held:
		if err != nil {
			t.Fatalf("bob's held join: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bob's held join never answered")
	}

	// Two members: full.
	err = g.tryJoin(carol, room, nil)
	if code, _ := refusedErr(err); code != codes.RoomFull {
		t.Fatalf("carol's join into a full room: %v, want %s", err, codes.RoomFull)
	}
	if n := g.s.Logs.Count("room_join ran", "player_id", "carol"); n != 0 {
		t.Errorf("room_join ran %d times for joins into a full room", n)
	}
	g.expectHome(carol, "a full room")

	// Bob leaves: carol takes his seat, and dave is refused.
	g.leave(bob)
	g.s.Logs.WaitFor(t, "left door", "player_id", "bob", "reason", "left")
	if err := g.tryJoin(carol, room, nil); err != nil {
		t.Fatalf("carol's join after bob left: %v", err)
	}
	if code, _ := refusedErr(g.tryJoin(dave, room, nil)); code != codes.RoomFull {
		t.Fatalf("dave's join into a full room again: %q, want %s", code, codes.RoomFull)
	}
	// Carol's connection closes: she leaves, and dave takes her seat.
	carol.c.Close()
	g.s.Logs.WaitFor(t, "left door", "player_id", "carol", "reason", "closed")
	if err := g.tryJoin(dave, room, nil); err != nil {
		t.Fatalf("dave's join after carol's connection closed: %v", err)
	}
	if code, _ := refusedErr(g.tryJoin(bob, room, nil)); code != codes.RoomFull {
		t.Fatalf("bob's join back into a full room: %q, want %s", code, codes.RoomFull)
	}
}
