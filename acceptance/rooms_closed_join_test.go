package acceptance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

// TestRoomClosedJoin is a join whose bind reaches a room that closed
// meanwhile (docs/rooms.md §4.4, §5.2): the runtime binds the session back
// to its return target with leave reason room_closed, and END (reason
// room_closed, §8.2) rides on that bind, so that the client's join ends
// at once instead of waiting for a SNAPSHOT that will never come.
//
// The race is forced, not waited for (testdata/rooms_closed_join.lua): the
// room's room_join asks home to spin and waits until the spin armed it, so
// home's one VM is busy, never suspending, before the join's reply leaves
// the room; room_join then closes the room and accepts in the same run.
// The reply waits on home's control lane until the spin returns, which it
// does only once shield.send to the room answers room_not_found, that is
// once the room's actor is unregistered. Only then does home bind the
// session to the room, so the runtime always hears that bind for a room
// that is gone. A bind heard by the closing room itself would have said
// join_failed, not room_closed.
func TestRoomClosedJoin(t *testing.T) {
	conf := "node: {name: gw-closed-join}\nnetwork:\n  listeners:\n" +
		"    - {name: game, address: \"127.0.0.1:0\", entry_service: home}\n" +
		"log: {format: json, level: info}\nactors:\n" +
		roomKind("home", "rooms_closed_join.lua", "",
			"{id: 1, name: login, binding: login, requires_auth: false}", "{id: 2, name: make, binding: make}",
			"{id: 6, name: ping, binding: ping}") +
		roomKind("shut", "rooms_closed_join.lua", "tick_hz: 10")
	s := wiretest.Start(t, "shield.yaml", conf, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := &roomsRig{t: t, s: s, ctx: ctx}

	c := g.dialPlain(client.Options{})
	// The state frames, as the read loop decodes them: one goroutine, so
	// the Tracker needs no lock.
	var tr statesync.Tracker
	frames := make(chan statesync.Update, 16)
	c.OnPush(roomsState, func(body []byte) {
		u, err := tr.Receive(body)
		if err != nil {
			t.Errorf("state frame: %v", err)
		}
		select {
		case frames <- u:
		default:
			t.Errorf("more state frames than the test reads: %+v", u)
		}
	})
	g.login(c, "alice")

	// Several rounds on one session: each is the same forced race, and a
	// session home after one joins the next room as any other would.
	for round := range 3 {
		var made struct{ Room string }
		if err := c.Call(ctx, roomsMake, nil, &made); err != nil || made.Room == "" {
			t.Fatalf("round %d: make: %+v %v", round, made, err)
		}
		room := made.Room

		// The join and its END, within 5 s: a stranded session would wait
		// out its SDK's timeout instead.
		start := time.Now()
		joinCtx, cancelJoin := context.WithTimeout(ctx, 5*time.Second)
		var joined struct{ Room string }
		if err := c.Call(joinCtx, roomsJoin, map[string]any{"room": room}, &joined); err != nil || joined.Room != room {
			cancelJoin()
			t.Fatalf("round %d: the join of %s: %+v %v (its bind succeeds: the room closes after room_join accepted)",
				round, room, joined, err)
		}
		var end statesync.Update
		select {
		case end = <-frames:
		case <-joinCtx.Done():
			cancelJoin()
			t.Fatalf("round %d: no state frame within 5 s of the join of %s: the session is stranded", round, room)
		}
		cancelJoin()
		took := time.Since(start)
		if end.Kind != statesync.EndFrame || end.Status != statesync.Ended || end.Reason != "room_closed" {
			t.Fatalf("round %d: the first state frame after the join: %+v, want END with reason room_closed", round, end)
		}
		t.Logf("round %d: END %q %q %v after the join was sent", round, end.Reason, end.Message, took)

		// Home at once after END (§8.3 step 3): the next call reaches
		// home's VM, whose client_bound heard the leave reason.
		var home struct {
			Home         bool
			Room, Reason string
		}
		if err := c.Call(ctx, roomsPing, nil, &home); err != nil || !home.Home || home.Room != room || home.Reason != "room_closed" {
			t.Fatalf("round %d: ping after END: %+v %v, want home, from room %s with reason room_closed", round, home, err, room)
		}
		select {
		case u := <-frames:
			t.Fatalf("round %d: a state frame after END: %+v", round, u)
		default:
		}
		// The order the script forced, as its log says it: the room
		// accepted and closed, the spin saw it gone, then the session came
		// home.
		accepted := s.Logs.Find("shut accepts and closes", "room", room)
		gone := s.Logs.Find("spin saw the room gone", "room", room)
		back := s.Logs.Find("home again", "room", room, "reason", "room_closed")
		if accepted < 0 || gone < accepted || back < gone {
			t.Fatalf("round %d: log order accepted %d, spin saw it gone %d, home again %d: want them in that order",
				round, accepted, gone, back)
		}
	}

	// The Go SDK's Join ends with the END's reason, not its timeout.
	sdk := g.dialPlain(client.Options{})
	r := sdk.Room()
	g.login(sdk, "bob")
	var made struct{ Room string }
	if err := sdk.Call(ctx, roomsMake, nil, &made); err != nil {
		t.Fatal(err)
	}
	joinCtx, cancelJoin := context.WithTimeout(ctx, 5*time.Second)
	defer cancelJoin()
	var ended *client.EndedError
	if err := r.Join(joinCtx, made.Room, nil); !errors.As(err, &ended) || ended.Reason != "room_closed" || ended.Room != made.Room {
		t.Fatalf("the SDK's Join of a room closed meanwhile: %v, want an EndedError with reason room_closed", err)
	}
	if r.In() {
		t.Fatal("the SDK says it is in the room after its END")
	}
}
