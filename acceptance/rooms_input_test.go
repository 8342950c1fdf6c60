package acceptance

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/statesync"
)

// docs/rooms.md §15's input tests (§5.1, §6): inputs reach room_tick in each
// member's order with their seq, each in exactly one tick; the per-member
// bound tail-drops and counts, a request input is answered after its tick,
// and frames from a stale epoch never become inputs. The harness is in
// rooms_harness_test.go; the rooms run testdata/rooms_input_pad.lua.

// Routes of the input kinds.
const (
	riMove    = 3001 // pad: room_input
	riPress   = 3002 // gate: room_input
	riHold    = 3003 // gate: arms the hold
	riTicked  = 3004 // gate: s2c, each input back to its sender from its tick
	riHolding = 3005 // gate: s2c, the hold began
	riKick    = 3006 // pad: hold the VM 300 ms, then room:remove the caller
)

// pad ticks at 20 Hz and keeps up to 64 inputs per member per tick; gate
// ticks at 2 Hz and keeps 4.
func riStart(t *testing.T, node string) *roomsRig {
	return startRooms(t, roomsConf{node: node, timeout: 60 * time.Second, kinds: roomKind("pad", "rooms_input_pad.lua",
		"tick_hz: 20, input_queue: 64, idle_close: 0s",
		"{id: 3001, name: move, room_input: true}", "{id: 3006, name: pad_kick, binding: pad_kick}") +
		roomKind("gate", "rooms_input_pad.lua", "tick_hz: 2, input_queue: 4, idle_close: 0s",
			"{id: 3002, name: press, room_input: true}", "{id: 3003, name: gate_hold, binding: gate_hold}",
			"{id: 3004, name: ticked, binding: ticked, direction: s2c}",
			"{id: 3005, name: holding, binding: holding, direction: s2c}")})
}

// riInput is one input as room_tick logged it.
type riInput struct {
	Tick      int64  `json:"tick"`
	I         int64  `json:"i"` // its index in the tick's inputs
	PlayerID  string `json:"player_id"`
	RefPlayer string `json:"ref_player"`
	Seq       int64  `json:"seq"`
	N         int64  `json:"n"`
	Route     string `json:"route"`
	RouteID   int64  `json:"route_id"`
	At        int64  `json:"at"`
}

type riInputs struct {
	Log     []riInput        `json:"log"`
	Tick    int64            `json:"tick"`
	Dropped map[string]int64 `json:"dropped"`
}

func (w *roomsRig) inputs(room string) riInputs {
	w.t.Helper()
	var got riInputs
	w.ask(room, "inputs", nil, &got)
	return got
}

// waitTicks waits until the room ran n more ticks than it had.
func (w *roomsRig) waitTicks(room string, n int64) riInputs {
	w.t.Helper()
	from := w.inputs(room).Tick
	var got riInputs
	waitFor(w.t, 10*time.Second, fmt.Sprintf("%d more ticks of %s", n, room), func() bool {
		got = w.inputs(room)
		return got.Tick >= from+n
	})
	return got
}

// of is the inputs of player, in log order.
func (in riInputs) of(player string) []riInput {
	var out []riInput
	for _, e := range in.Log {
		if e.PlayerID == player {
			out = append(out, e)
		}
	}
	return out
}

func ns(es []riInput) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.N
	}
	return out
}

// TestInputsOrdered proves §6's order: three members each send 20 notifies
// on a room_input route, paced over several ticks; room_tick is handed every
// one exactly once, each member's in its send order with seq 1, 2, 3, ...,
// the inputs of a tick in the order the room took them (the ticks of the
// log never go back), with player_id, ref, route, route_id and the gateway's
// read time; nothing is dropped below input_queue.
func TestInputsOrdered(t *testing.T) {
	w := riStart(t, "gw-order")
	room := w.make("pad", nil)
	names := []string{"alice", "bob", "carol"}
	members := make([]*roomMember, len(names))
	for i, name := range names {
		members[i] = w.player(name)
		w.join(members[i], room)
	}
	const n = 20
	sent := time.Now().UnixMilli()
	var wg sync.WaitGroup
	errs := make(chan error, len(members))
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= n; i++ {
				if err := m.c.Notify(riMove, map[string]int{"n": i}); err != nil {
					errs <- fmt.Errorf("%s's input %d: %w", m.name, i, err)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every input in a tick", func() bool { return len(w.inputs(room).Log) >= len(members)*n })
	got := w.waitTicks(room, 3) // and a few ticks more: none comes twice
	done := time.Now().UnixMilli()

	if len(got.Log) != len(members)*n {
		t.Fatalf("room_tick was handed %d inputs, want %d: each input in exactly one tick", len(got.Log), len(members)*n)
	}
	ticks := map[int64]bool{}
	for k, e := range got.Log {
		ticks[e.Tick] = true
		if k > 0 {
			prev := got.Log[k-1]
			switch {
			case e.Tick < prev.Tick:
				t.Fatalf("input %d is in tick %d, after one of tick %d", k, e.Tick, prev.Tick)
			case e.Tick == prev.Tick && e.I != prev.I+1, e.Tick != prev.Tick && e.I != 1:
				t.Fatalf("input %d: index %d in tick %d after index %d: the log missed one", k, e.I, e.Tick, prev.I)
			}
		}
		if e.Route != "move" || e.RouteID != riMove || e.RefPlayer != e.PlayerID {
			t.Fatalf("input %d: %+v: want route move (%d) and a ref of its player", k, e, riMove)
		}
		if e.At < sent-1000 || e.At > done+1000 {
			t.Fatalf("input %d: at %d is not when the gateway read it (sent from %d, done by %d)", k, e.At, sent, done)
		}
	}
	for _, name := range names {
		es := got.of(name)
		for i, e := range es {
			if e.N != int64(i+1) || e.Seq != int64(i+1) {
				t.Fatalf("%s's inputs arrived as n %v (seq of input %d: %d): want 1..%d in send order, seq alike", name, ns(es), i, e.Seq, n)
			}
			if i > 0 && e.At < es[i-1].At {
				t.Fatalf("%s's input %d read at %d, before input %d at %d", name, e.N, e.At, es[i-1].N, es[i-1].At)
			}
		}
		if len(es) != n || got.Dropped[name] != 0 {
			t.Fatalf("%s: %d inputs, %d dropped; want %d, none dropped", name, len(es), got.Dropped[name], n)
		}
	}
	if len(ticks) < 2 {
		t.Fatalf("inputs paced over 100 ms all came in one tick")
	}
	t.Logf("%d inputs over %d ticks", len(got.Log), len(ticks))
}

// TestInputQueueBound proves §6's bound of room.input_queue (4) inputs per
// member per tick: with the VM held, a member sends 7 notifies and then a
// request, all taken before one tick; that tick gets the first 4 (tail
// drop), member.inputs_dropped counts the other 4, the request past the
// bound is answered client_rpc.busy at once, and none of the dropped ever
// reaches room_tick. A request input within the bound is answered only
// after its tick: room_tick's push to the member arrives before the answer.
// seq counts dropped inputs too.
func TestInputQueueBound(t *testing.T) {
	w := riStart(t, "gw-bound")
	room := w.make("gate", nil)
	alice := w.player("alice", riTicked, riHolding)
	w.join(alice, room)

	if err := alice.c.Call(w.ctx, riHold, map[string]any{}, nil); err != nil {
		t.Fatalf("arm the hold: %v", err)
	}
	waitFor(t, 10*time.Second, "the hold to begin", func() bool { return len(alice.pushed(riHolding)) > 0 })
	for i := 1; i <= 7; i++ {
		if err := alice.c.Notify(riPress, map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	err := alice.c.Call(w.ctx, riPress, map[string]int{"n": 8}, nil)
	var ce *codes.Error
	if !errors.As(err, &ce) || ce.Code != codes.Busy || ce.Message != "room input queue full (room.input_queue 4)" {
		t.Fatalf("a request input past the bound: %v; want client_rpc.busy \"room input queue full (room.input_queue 4)\"", err)
	}
	waitFor(t, 10*time.Second, "the tick after the hold", func() bool { return len(w.inputs(room).Log) > 0 })
	got := w.waitTicks(room, 2)
	es := got.of("alice")
	if fmt.Sprint(ns(es)) != "[1 2 3 4]" {
		t.Fatalf("the tick got inputs %v, want [1 2 3 4]: the first input_queue kept, the rest dropped", ns(es))
	}
	for i, e := range es {
		if e.Tick != es[0].Tick || e.Seq != int64(i+1) {
			t.Fatalf("kept input %+v: want all in tick %d, seq %d", e, es[0].Tick, i+1)
		}
	}
	if got.Dropped["alice"] != 4 {
		t.Fatalf("member.inputs_dropped = %d, want 4 (inputs 5 to 8)", got.Dropped["alice"])
	}

	// Within the bound, a request is answered once its tick returned.
	if err := alice.c.Call(w.ctx, riPress, map[string]int{"n": 9}, nil); err != nil {
		t.Fatalf("a request input within the bound: %v", err)
	}
	var ticked []struct{ Tick, N, Seq int64 }
	for _, b := range alice.pushed(riTicked) {
		var p struct{ Tick, N, Seq int64 }
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		ticked = append(ticked, p)
	}
	if len(ticked) != 5 || ticked[4].N != 9 || ticked[4].Seq != 9 {
		t.Fatalf("pushed from room_tick before the request's answer: %+v; want inputs 1-4 then 9 with seq 9 (dropped ones counted)", ticked)
	}
	got = w.waitTicks(room, 1)
	if fmt.Sprint(ns(got.of("alice"))) != "[1 2 3 4 9]" {
		t.Fatalf("room_tick was handed inputs %v, want [1 2 3 4 9]: a dropped input never appears", ns(got.of("alice")))
	}
}

// TestStaleInputs proves §5.1's stale rule at both ends of a membership.
// After the leave: alice sends pad_kick, a room handler that holds the
// room 300 ms and then removes her (room:remove), and right behind it more
// inputs: the gateway reads them at the room's epoch, the room takes them
// after she left; none becomes an input, and a request among them answers
// client_rpc.epoch_expired.
// Before the join: bob's join runs in a lobby handler while the lobby is
// held, so the frames he sends right after are read at his old epoch and
// queued for the lobby, which takes them after the bind: a request among
// them answers client_rpc.epoch_expired, and his first input after the
// SNAPSHOT has seq 1.
func TestStaleInputs(t *testing.T) {
	w := riStart(t, "gw-stale")
	room := w.make("pad", nil)

	alice := w.player("alice")
	w.join(alice, room)
	for i := 1; i <= 3; i++ {
		if err := alice.c.Notify(riMove, map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "alice's inputs", func() bool { return len(w.inputs(room).of("alice")) == 3 })
	if err := alice.c.Notify(riKick, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	for i := 4; i <= 8; i++ {
		if err := alice.c.Notify(riMove, map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	err := alice.c.Call(w.ctx, riMove, map[string]int{"n": 9}, nil)
	if code, _ := codes.CodeOf(err); code != codes.EpochExpired {
		t.Fatalf("a request input at the room's epoch, taken after the member left: %v, want client_rpc.epoch_expired", err)
	}
	waitFor(t, 10*time.Second, "alice's END", func() bool {
		u, ok := alice.end()
		return ok && u.Reason == "removed"
	})
	w.s.Logs.WaitFor(t, "left room", "player_id", "alice", "reason", "removed")
	got := w.waitTicks(room, 3)
	if fmt.Sprint(ns(got.of("alice"))) != "[1 2 3]" {
		t.Fatalf("alice's inputs %v, want [1 2 3]: nothing sent after the leave is an input", ns(got.of("alice")))
	}

	bob := w.player("bob")
	send := func(route uint32, body any) {
		if err := bob.c.Notify(route, body); err != nil {
			t.Fatal(err)
		}
	}
	send(roomsEnter, map[string]any{"room": room, "meta": map[string]any{"slow": true}})
	send(roomsHold, map[string]any{"ms": 300}) // runs while the join waits for room_join
	send(roomsHold, map[string]any{"ms": 300}) // runs while the bind is made, or is stale itself
	for i := 101; i <= 103; i++ {
		send(riMove, map[string]int{"n": i})
	}
	err = bob.c.Call(w.ctx, riMove, map[string]int{"n": 104}, nil)
	if code, _ := codes.CodeOf(err); code != codes.EpochExpired {
		t.Fatalf("a request read before the join's bind, queued for the lobby: %v, want client_rpc.epoch_expired", err)
	}
	bob.waitSnapshot(t, room)
	send(riMove, map[string]int{"n": 105})
	waitFor(t, 10*time.Second, "bob's input after the SNAPSHOT", func() bool { return len(w.inputs(room).of("bob")) > 0 })
	got = w.waitTicks(room, 2)
	es := got.of("bob")
	if len(es) != 1 || es[0].N != 105 || es[0].Seq != 1 {
		t.Fatalf("bob's inputs %+v, want only 105 with seq 1: frames of the old epoch never become inputs", es)
	}
	if _, _, _, ups, errs := bob.view(); len(errs) > 0 || ups[0].Kind != statesync.SnapshotFrame {
		t.Fatalf("bob's state frames: %d errors %v, first %v", len(errs), errs, ups[0].Kind)
	}
}
