package acceptance

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// Matchmaking in one process (docs/rooms.md §4.5, §9): queues, the
// matched push, reserved seats and their tokens.

// matchRig is a gateway with a duel_room kind (testdata/rooms_match.lua)
// and the queues of match.
func matchRig(t *testing.T, room, match string) *roomsRig {
	return startRooms(t, roomsConf{node: "gw-match", timeout: 30 * time.Second, strict: true, match: match,
		kinds: roomKind("duel_room", "rooms_match.lua", room)})
}

// matchEvent is a shield.match push (§9.3).
type matchEvent struct {
	Event, Ticket, Room, Token string
	ExpiresMS                  int64 `json:"expires_ms"`
	Players                    []string
}

// play enqueues m in queue with props and query (nil: none) and returns
// the ticket.
func (g *roomsRig) play(m *roomMember, queue string, props, query any) (string, error) {
	req := map[string]any{"queue": queue}
	if props != nil {
		req["props"] = props
	}
	if query != nil {
		req["query"] = query
	}
	var out struct{ Ticket string }
	err := m.c.Call(g.ctx, roomsPlay, req, &out)
	return out.Ticket, err
}

// quitPlay cancels a ticket: whether it was waiting.
func (g *roomsRig) quitPlay(m *roomMember, ticket string) bool {
	g.t.Helper()
	var out struct{ Cancelled bool }
	if err := m.c.Call(g.ctx, roomsQuit, map[string]string{"ticket": ticket}, &out); err != nil {
		g.t.Fatalf("%s's cancel of %s: %v", m.name, ticket, err)
	}
	return out.Cancelled
}

// event waits for m's n-th shield.match push (from 1).
func (g *roomsRig) event(m *roomMember, n int) matchEvent {
	g.t.Helper()
	wiretest.Eventually(g.t, m.name+"'s shield.match push", func() bool { return len(m.pushed(roomsMatch)) >= n })
	var e matchEvent
	if err := json.Unmarshal(m.pushed(roomsMatch)[n-1], &e); err != nil {
		g.t.Fatal(err)
	}
	return e
}

// joinToken sends shield.room.join with a token.
func (g *roomsRig) joinToken(m *roomMember, room, token string) error {
	var joined struct{ Room string }
	return m.c.Call(g.ctx, roomsJoin, map[string]string{"room": room, "token": token}, &joined)
}

// matchInfo is rooms_match.lua's info.
type matchInfo struct {
	Params struct {
		Queue   string
		Players []struct {
			PlayerID string `json:"player_id"`
			Props    map[string]any
		}
	}
	Seen     map[string]json.RawMessage
	Released map[string]string
	Members  []string
}

func (g *roomsRig) info(room string) matchInfo {
	g.t.Helper()
	var raw map[string]json.RawMessage
	g.ask(room, "info", nil, &raw)
	var in matchInfo
	// An empty Lua table is a JSON object or array: only the objects
	// matter here.
	for k, dst := range map[string]any{"params": &in.Params, "seen": &in.Seen, "released": &in.Released, "members": &in.Members} {
		if b := raw[k]; len(b) > 0 && string(b) != "[]" {
			if err := json.Unmarshal(b, dst); err != nil {
				g.t.Fatalf("info %s: %v in %s", k, err, b)
			}
		}
	}
	return in
}

func codeOf(err error) codes.Code {
	code, _ := refusedErr(err)
	return code
}

// incidentSays checks that err is handler_failed whose incident line's
// error contains want.
func (g *roomsRig) incidentSays(err error, want string) {
	g.t.Helper()
	code, msg := refusedErr(err)
	m := incidentMessage.FindStringSubmatch(msg)
	if code != codes.HandlerFailed || m == nil {
		g.t.Fatalf("got %v, want %s with an incident", err, codes.HandlerFailed)
	}
	i := g.s.Logs.WaitFor(g.t, "handler failed", "incident", m[1])
	if e := g.s.Logs.Entry(i); !strings.Contains(e.Attrs["error"], want) {
		g.t.Errorf("the incident's error %q does not say %q", e.Attrs["error"], want)
	}
}

// TestMatchToJoin is §9.2-§9.3: compatible tickets form a match, oldest
// first; the queue makes the room with the players as params and a seat
// each; each player's matched push names the room and its own token;
// the joins with the tokens reach room_join with the seat. Also: cancel,
// already_queued, a bad query, an unknown queue.
func TestMatchToJoin(t *testing.T) {
	g := matchRig(t, "max_members: 4",
		"queues: [{name: duel, room: duel_room, min_players: 2, max_players: 2, fill_wait: 0s, interval: 50ms}]")
	alice, bob, carol, dave := g.player("alice", roomsMatch), g.player("bob", roomsMatch), g.player("carol", roomsMatch), g.player("dave", roomsMatch)
	skilled := map[string]any{"skill": map[string]any{"min": 1000, "max": 2000}}

	// carol is too weak for alice's query: she waits, and cancels.
	tc, err := g.play(carol, "duel", map[string]any{"skill": 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.play(carol, "duel", map[string]any{"skill": 100}, nil); codeOf(err) != codes.AlreadyQueued {
		t.Fatalf("carol's second ticket: %v, want %s", err, codes.AlreadyQueued)
	}
	ta, err := g.play(alice, "duel", map[string]any{"skill": 1500, "mode": "ranked"}, skilled)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := g.play(bob, "duel", map[string]any{"skill": 1400, "mode": "ranked"}, skilled)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ta, "duel/") || len(ta) != len("duel/")+16 {
		t.Fatalf("ticket %q: want duel/<16 hex>", ta)
	}
	ea, eb := g.event(alice, 1), g.event(bob, 1)
	for _, c := range []struct {
		e      matchEvent
		ticket string
	}{{ea, ta}, {eb, tb}} {
		if c.e.Event != "matched" || c.e.Ticket != c.ticket || c.e.ExpiresMS != 15000 || len(c.e.Token) != 32 ||
			!slices.Equal(c.e.Players, []string{"alice", "bob"}) {
			t.Fatalf("matched push %+v, want ticket %s, expires_ms 15000, a 32-hex token, players [alice bob]", c.e, c.ticket)
		}
	}
	if ea.Room != eb.Room || ea.Token == eb.Token {
		t.Fatalf("alice %+v and bob %+v: want one room, two tokens", ea, eb)
	}
	if !g.quitPlay(carol, tc) || g.quitPlay(carol, tc) || g.quitPlay(alice, ta) {
		t.Fatal("cancel: want true for carol's waiting ticket, then false, and false for alice's matched one")
	}

	// The tokens are each player's own: bob cannot use alice's.
	if err := g.joinToken(bob, ea.Room, ea.Token); codeOf(err) != codes.ReservationInvalid {
		t.Fatalf("bob with alice's token: %v, want %s", err, codes.ReservationInvalid)
	}
	for _, c := range []struct {
		m *roomMember
		e matchEvent
	}{{alice, ea}, {bob, eb}} {
		if err := g.joinToken(c.m, c.e.Room, c.e.Token); err != nil {
			t.Fatalf("%s's join with its token: %v", c.m.name, err)
		}
		c.m.waitSnapshot(t, c.e.Room)
	}
	in := g.info(ea.Room)
	if in.Params.Queue != "duel" || len(in.Params.Players) != 2 || in.Params.Players[0].PlayerID != "alice" ||
		in.Params.Players[1].PlayerID != "bob" || in.Params.Players[0].Props["mode"] != "ranked" {
		t.Fatalf("room params %+v: want queue duel, players alice then bob with their props", in.Params)
	}
	var seat struct {
		Token, Queue string
		Props        map[string]any
	}
	if err := json.Unmarshal(in.Seen["alice"], &seat); err != nil || seat.Token != ea.Token || seat.Queue != "duel" || seat.Props["skill"] != float64(1500) {
		t.Fatalf("alice's seat in room_join: %s (%v), want her token, queue duel, her props", in.Seen["alice"], err)
	}
	if !slices.Contains(in.Members, "alice:"+ea.Token) {
		t.Fatalf("members %v: want alice with her seat", in.Members)
	}
	// A token is good once.
	g.leave(alice)
	if err := g.joinToken(alice, ea.Room, ea.Token); codeOf(err) != codes.ReservationInvalid {
		t.Fatalf("alice's token used twice: %v, want %s", err, codes.ReservationInvalid)
	}

	for _, c := range []struct {
		queue        string
		props, query any
		code         codes.Code
		msg          string
	}{
		{"nowhere", nil, nil, codes.Unavailable, `no match queue "nowhere"`},
		{"duel", map[string]any{"skill": map[string]any{"x": 1}}, nil, codes.HandlerFailed,
			"shield.match.enqueue: props.skill: a string, number or boolean is required, got table"},
		{"duel", nil, map[string]any{"skill": map[string]any{"min": 5, "max": 1}}, codes.HandlerFailed,
			"shield.match.enqueue: query.skill: min 5 is above max 1"},
	} {
		_, err := g.play(dave, c.queue, c.props, c.query)
		if c.code == codes.HandlerFailed {
			g.incidentSays(err, c.msg)
		} else if codeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("enqueue %s %v %v: %v, want %s %q", c.queue, c.props, c.query, err, c.code, c.msg)
		}
	}
}

// TestReservationExpires is §9.2-§9.3: a seat its player does not take
// within reservation_ttl is released (room_seat_released "expired") and
// its token refused; a ticket no one matches within ticket_ttl ends with
// the expired event; a matched push the gateway refuses (the player's
// session moved on) frees the seat at once ("unreachable").
func TestReservationExpires(t *testing.T) {
	g := matchRig(t, "max_members: 4, tick_hz: 20", strings.Join([]string{
		"queues: [{name: quick, room: duel_room, fill_wait: 0s, interval: 50ms, reservation_ttl: 400ms}",
		"{name: lonely, room: duel_room, interval: 50ms, ticket_ttl: 300ms}]"}, ", "))
	alice, bob := g.player("alice", roomsMatch), g.player("bob", roomsMatch)
	for _, m := range []*roomMember{alice, bob} {
		if _, err := g.play(m, "quick", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	ea, eb := g.event(alice, 1), g.event(bob, 1)
	if ea.ExpiresMS != 400 {
		t.Fatalf("expires_ms %d, want 400", ea.ExpiresMS)
	}
	if err := g.joinToken(alice, ea.Room, ea.Token); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "bob's seat released", func() bool { return g.info(ea.Room).Released["bob"] == "expired" })
	if err := g.joinToken(bob, eb.Room, eb.Token); codeOf(err) != codes.ReservationInvalid {
		t.Fatalf("bob's expired token: %v, want %s", err, codes.ReservationInvalid)
	}

	erin := g.player("erin", roomsMatch)
	te, err := g.play(erin, "lonely", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := g.event(erin, 1); e.Event != "expired" || e.Ticket != te {
		t.Fatalf("erin's event %+v, want expired for %s", e, te)
	}
	if g.quitPlay(erin, te) {
		t.Fatal("an expired ticket was cancelled")
	}

	// frank queues, then his session moves into a room: the matched push
	// at his old epoch is refused, and his seat is freed at once.
	frank, gina := g.player("frank", roomsMatch), g.player("gina", roomsMatch)
	if _, err := g.play(frank, "quick", nil, nil); err != nil {
		t.Fatal(err)
	}
	g.join(frank, g.make("duel_room", nil))
	if _, err := g.play(gina, "quick", nil, nil); err != nil {
		t.Fatal(err)
	}
	eg := g.event(gina, 1)
	wiretest.Eventually(t, "frank's seat released", func() bool { return g.info(eg.Room).Released["frank"] == "unreachable" })
	if n := len(frank.pushed(roomsMatch)); n != 0 {
		t.Fatalf("frank got %d shield.match pushes in the room", n)
	}

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"shield_match_tickets_total", map[string]string{"queue": "quick", "outcome": "matched"}, 3},
		{"shield_match_tickets_total", map[string]string{"queue": "quick", "outcome": "unreachable"}, 1},
		{"shield_match_tickets_total", map[string]string{"queue": "lonely", "outcome": "expired"}, 1},
		{"shield_match_tickets", map[string]string{"queue": "quick"}, 0},
		{"shield_matches_total", map[string]string{"queue": "quick", "result": "ok"}, 2},
		{"shield_match_wait_seconds", map[string]string{"queue": "quick"}, 3},
		{"shield_room_reservations_total", map[string]string{"kind": "duel_room", "outcome": "used"}, 1},
		{"shield_room_reservations_total", map[string]string{"kind": "duel_room", "outcome": "unreachable"}, 1},
	} {
		if got := gathered(t, g, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// gathered is the value of the metric name with labels on the server's
// registry: a counter's or gauge's value, a histogram's count.
func gathered(t *testing.T, g *roomsRig, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.s.Srv.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

// TestReservationInvalid is §4.2 room:reserve and §4.4: a reserved seat
// counts against max_members for tokenless joins; a token is for its
// player, its room, once, and until its ttl.
func TestReservationInvalid(t *testing.T) {
	g := matchRig(t, "max_members: 2, tick_hz: 20", "")
	room, other := g.make("duel_room", nil), g.make("duel_room", nil)
	var ra, rb struct{ Token string }
	g.ask(room, "reserve", map[string]any{"player": "alice"}, &ra)
	g.ask(room, "reserve", map[string]any{"player": "bob", "ttl_ms": 1000}, &rb)
	var ro struct{ Token string }
	g.ask(other, "reserve", map[string]any{"player": "alice"}, &ro)
	alice, bob, carol := g.player("alice"), g.player("bob"), g.player("carol")

	if err := g.tryJoin(carol, room, nil); codeOf(err) != codes.RoomFull {
		t.Fatalf("carol's tokenless join of a room whose 2 seats are reserved: %v, want %s", err, codes.RoomFull)
	}
	for _, c := range []struct {
		m           *roomMember
		room, token string
	}{
		{carol, room, ra.Token},                           // another player's
		{alice, room, "00000000000000000000000000000000"}, // unknown
		{alice, room, ro.Token},                           // another room's
	} {
		if err := g.joinToken(c.m, c.room, c.token); codeOf(err) != codes.ReservationInvalid {
			t.Errorf("%s with token %s for %s: %v, want %s", c.m.name, c.token, c.room, err, codes.ReservationInvalid)
		}
	}
	if err := g.joinToken(alice, room, ra.Token); err != nil {
		t.Fatal(err)
	}
	alice.waitSnapshot(t, room)
	// bob's seat expires after its 1 s: the room has a free seat again.
	wiretest.Eventually(t, "bob's seat released", func() bool { return g.info(room).Released["bob"] == "expired" })
	if err := g.joinToken(bob, room, rb.Token); codeOf(err) != codes.ReservationInvalid {
		t.Fatalf("bob's expired token: %v, want %s", err, codes.ReservationInvalid)
	}
	g.join(carol, room)

	var bad struct{ Token string }
	req := map[string]any{"room": room, "method": "reserve", "arg": map[string]any{"player": "dan", "ttl_ms": 10}}
	g.incidentSays(g.observer().c.Call(g.ctx, roomsAsk, req, &bad), "room:reserve: ttl_ms must be an integer from 1000 to 300000")
	if err := g.observer().c.Call(g.ctx, roomsAsk, map[string]any{"room": room, "method": "reserve", "arg": map[string]any{"player": "dan"}}, &bad); codeOf(err) != codes.RoomFull {
		t.Fatalf("reserve in a full room: %v, want %s", err, codes.RoomFull)
	}
}

// TestMatchConcurrent is §12's matchmaking guarantees through the real
// queue actor: 32 players enqueue within 300 ms and half of them cancel
// soon after, at a random moment. Every ticket ends exactly once (matched, cancelled or
// expired), a ticket whose cancel returned true is in no match, and every
// match has 2 to 4 players, each told the same room and players.
func TestMatchConcurrent(t *testing.T) {
	g := matchRig(t, "max_members: 4", "queues: [{name: brawl, room: duel_room, min_players: 2, max_players: 4, fill_wait: 100ms, interval: 20ms, ticket_ttl: 2s}]")
	const n = 32
	players := make([]*roomMember, n)
	for i := range players {
		players[i] = g.player(fmt.Sprintf("p%02d", i), roomsMatch)
	}
	tickets := make([]string, n)
	cancelled := make([]bool, n)
	var wg sync.WaitGroup
	for i, m := range players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond) // spread over some passes
			tk, err := g.play(m, "brawl", nil, nil)
			if err != nil {
				t.Errorf("%s: %v", m.name, err)
				return
			}
			tickets[i] = tk
			if i%2 == 0 {
				time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
				var out struct{ Cancelled bool }
				if err := m.c.Call(g.ctx, roomsQuit, map[string]string{"ticket": tk}, &out); err != nil {
					t.Errorf("%s's cancel: %v", m.name, err)
				}
				cancelled[i] = out.Cancelled
			}
		}()
	}
	wg.Wait()
	ended := func(i int) int {
		k := len(players[i].pushed(roomsMatch))
		if cancelled[i] {
			k++
		}
		return k
	}
	wiretest.Eventually(t, "every ticket ended", func() bool {
		for i := range players {
			if ended(i) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(200 * time.Millisecond) // a second end would come within a few passes
	rooms := map[string][]string{}
	outcomes := map[string]int{}
	for i, m := range players {
		if k := ended(i); k != 1 {
			t.Fatalf("%s's ticket %s ended %d times (cancelled %v, pushes %d)", m.name, tickets[i], k, cancelled[i], len(m.pushed(roomsMatch)))
		}
		if cancelled[i] {
			outcomes["cancelled"]++
			continue
		}
		e := g.event(m, 1)
		outcomes[e.Event]++
		if e.Ticket != tickets[i] {
			t.Fatalf("%s's push names ticket %s, want %s", m.name, e.Ticket, tickets[i])
		}
		if e.Event == "matched" {
			if prev, ok := rooms[e.Room]; ok && !slices.Equal(prev, e.Players) {
				t.Fatalf("room %s: players %v and %v", e.Room, prev, e.Players)
			}
			rooms[e.Room] = e.Players
			if !slices.Contains(e.Players, m.name) {
				t.Fatalf("%s is not among its match's players %v", m.name, e.Players)
			}
		}
	}
	for room, ps := range rooms {
		if len(ps) < 2 || len(ps) > 4 {
			t.Fatalf("room %s has %d players %v, want 2 to 4", room, len(ps), ps)
		}
		for _, p := range ps {
			var i int
			fmt.Sscanf(p, "p%02d", &i)
			if cancelled[i] {
				t.Fatalf("%s's cancel returned true, yet it is in room %s", p, room)
			}
		}
	}
	t.Logf("outcomes %v, %d matches", outcomes, len(rooms))
}

// TestDrainRefusesRooms is docs/rooms.md §10.3 in one process: from the
// start of a drain the node makes no room and its queues take no ticket
// (unavailable), while the sessions it still serves are answered.
func TestDrainRefusesRooms(t *testing.T) {
	g := matchRig(t, "max_members: 4",
		"queues: [{name: duel, room: duel_room, min_players: 2, max_players: 2, fill_wait: 0s, interval: 50ms}]")
	alice := g.player("alice", roomsMatch)
	room := g.makeOn(alice.c, "duel_room", map[string]int{"drain_ms": 1500})
	stopped := make(chan error, 1)
	go func() { stopped <- g.s.Stop() }()
	g.s.Logs.WaitFor(t, "room draining", "room", room)
	var made struct{ Room string }
	if err := alice.c.Call(g.ctx, roomsMake, map[string]string{"kind": "duel_room"}, &made); codeOf(err) != codes.Unavailable {
		t.Fatalf("a create during the drain: %+v %v, want %s", made, err, codes.Unavailable)
	}
	if _, err := g.play(alice, "duel", nil, nil); codeOf(err) != codes.Unavailable {
		t.Fatalf("an enqueue during the drain: %v, want %s", err, codes.Unavailable)
	}
	alice.c.Close() // the drain's last session: it ends now
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
