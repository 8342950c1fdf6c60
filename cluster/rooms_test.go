package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/luavm"
)

// Rooms and match queues across nodes (docs/rooms.md §11): a gateway
// node with the lobby, and service nodes hosting the room kinds and the
// queue. The scripts are the acceptance tests' rooms lobby and kinds
// (acceptance/testdata), so that one lobby serves every rooms test.

// The lobby's routes (acceptance/testdata/rooms_lobby.lua) and the
// reserved ones.
const (
	lobbyLogin = 1
	lobbyMake  = 2
	lobbyPing  = 6
	lobbyPlay  = 7
	arenaMove  = 3001
	roomJoin   = 65522
	matchPush  = 65524
)

// roomsNode is a node's config: services its node.services, queues its
// node.queues ("" for none), gateway whether it has the game listener.
func roomsNode(t testing.TB, name, services, queues string, gateway bool, port int) nodeSpec {
	data := dataDir(t)
	var b strings.Builder
	fmt.Fprintf(&b, "node:\n  name: %s\n  services: %s\n", name, services)
	if queues != "" {
		fmt.Fprintf(&b, "  queues: %s\n", queues)
	}
	fmt.Fprintf(&b, "cluster:\n  nats: nats://127.0.0.1:%d\n  heartbeat: %s\n  node_timeout: %s\n", port, heartbeat, nodeTimeout)
	if gateway {
		b.WriteString("network:\n  listeners:\n    - {name: game, address: \"127.0.0.1:0\", entry_service: lobby}\n")
	}
	fmt.Fprintf(&b, `log: {level: debug}
session: {idle_timeout: 60s, shutdown_grace: 2s, duplicate_login: kick_old}
match:
  queues: [{name: duel, room: duel_room, fill_wait: 0s, interval: 50ms}]
actors:
  - name: lobby
    script: %[1]s/rooms_lobby.lua
    rpc:
      routes:
        - {id: 1, name: login, binding: login, requires_auth: false}
        - {id: 2, name: make, binding: make}
        - {id: 3, name: ask, binding: ask}
        - {id: 4, name: enter, binding: enter}
        - {id: 5, name: hold, binding: hold}
        - {id: 6, name: ping, binding: ping}
        - {id: 7, name: play, binding: play}
        - {id: 8, name: quit_play, binding: quit_play}
  - name: arena
    script: %[1]s/rooms_resume.lua
    room: {tick_hz: 20}
    rpc:
      routes:
        - {id: 3001, name: move, room_input: true}
        - {id: 3002, name: out, binding: out}
  - name: duel_room
    script: %[1]s/rooms_match.lua
    room: {tick_hz: 20}
`, data)
	return nodeSpec{name: name, yaml: b.String()}
}

// dataDir is the acceptance tests' testdata, whose scripts these use.
func dataDir(t testing.TB) string {
	data, err := filepath.Abs("../acceptance/testdata")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// roomsCluster is a gateway node gw (the lobby) and service nodes svc-1
// and svc-2 hosting both room kinds, svc-1 the duel queue.
func roomsCluster(t *testing.T) (gw, s1, s2 *node) {
	port := startNATS(t).port
	gw = startNode(t, roomsNode(t, "gw", "[lobby]", "", true, port))
	s1 = startNode(t, roomsNode(t, "svc-1", "[arena, duel_room]", "[duel]", false, port))
	s2 = startNode(t, roomsNode(t, "svc-2", "[arena, duel_room]", "[]", false, port))
	waitReady(t, gw, s1, s2)
	return gw, s1, s2
}

// member is a logged-in client of gw with its Room.
type member struct {
	c    *client.Client
	room *client.Room
	mu   sync.Mutex
	push [][]byte // shield.match pushes
}

func newMember(t *testing.T, gw *node, user string) *member {
	m := &member{c: dial(t, gw, "game")}
	m.room = m.c.Room()
	m.c.OnPush(matchPush, func(b []byte) {
		m.mu.Lock()
		m.push = append(m.push, append([]byte(nil), b...))
		m.mu.Unlock()
	})
	var out struct{ OK bool }
	call(t, m.c, lobbyLogin, map[string]string{"user": user}, &out)
	return m
}

func (m *member) make(t *testing.T, kind string) string {
	t.Helper()
	var made struct{ Room string }
	call(t, m.c, lobbyMake, map[string]any{"kind": kind, "params": map[string]string{"name": "ticking"}}, &made)
	return made.Room
}

func (m *member) home(t *testing.T) {
	t.Helper()
	var home struct{ Home bool }
	if err := try(m.c, lobbyPing, nil, &home); err != nil || !home.Home {
		t.Fatalf("not home: %+v %v", home, err)
	}
}

func nodeOf(t *testing.T, room string) string {
	t.Helper()
	_, node, ok := luavm.ParseRoomID(room)
	if !ok {
		t.Fatalf("room id %q", room)
	}
	return node
}

// hostOf is the one of s1 (svc-1) and s2 (svc-2) that hosts room.
func hostOf(t *testing.T, room string, s1, s2 *node) *node {
	t.Helper()
	if nodeOf(t, room) == "svc-2" {
		return s2
	}
	return s1
}

func joinCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// TestRoomAcrossNodes is §11: a room made from the gateway's lobby lives
// on a service node; the member's join, inputs, state frames and leave
// cross NATS, and END comes with the bind back home. The same for a
// match: the queue on svc-1 forms it, its room is placed, the players
// join with their tokens.
func TestRoomAcrossNodes(t *testing.T) {
	gw, _, _ := roomsCluster(t)
	alice, bob := newMember(t, gw, "alice"), newMember(t, gw, "bob")
	room := alice.make(t, "arena")
	if n := nodeOf(t, room); n != "svc-1" && n != "svc-2" {
		t.Fatalf("room %s placed on %s, want a service node", room, n)
	}
	ctx, cancel := joinCtx()
	defer cancel()
	for _, m := range []*member{alice, bob} {
		if err := m.room.Join(ctx, room, nil); err != nil {
			t.Fatalf("join %s: %v", room, err)
		}
	}
	if err := alice.c.Notify(arenaMove, map[string]any{"x": 7}); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "bob sees alice's input", func() bool {
		var x any
		bob.room.State(func(st map[string]any, _ uint64, _ bool) {
			pos, _ := st["pos"].(map[string]any)
			x = pos["alice"]
		})
		return x == int64(7)
	})
	if err := alice.room.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if reason, _, _ := alice.room.End(); reason != "left" {
		t.Fatalf("alice's END %q, want left", reason)
	}
	alice.home(t)

	// A match: both enqueue through the lobby on gw; the queue is svc-1's.
	carol, dave := newMember(t, gw, "carol"), newMember(t, gw, "dave")
	for _, m := range []*member{carol, dave} {
		var out struct{ Ticket string }
		call(t, m.c, lobbyPlay, map[string]any{"queue": "duel"}, &out)
		if !strings.HasPrefix(out.Ticket, "duel/") {
			t.Fatalf("ticket %q", out.Ticket)
		}
	}
	for _, m := range []*member{carol, dave} {
		var e struct{ Event, Room, Token string }
		within(t, 5*time.Second, "the matched push", func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return len(m.push) > 0 && json.Unmarshal(m.push[0], &e) == nil
		})
		if e.Event != "matched" {
			t.Fatalf("event %+v", e)
		}
		if err := m.room.JoinToken(ctx, e.Room, e.Token, nil); err != nil {
			t.Fatalf("join %s with its token: %v", e.Room, err)
		}
	}
}

// TestRoomPlacement is §3.2: a burst of creates is spread over the hosts
// (each pick counts at once until the host's next heartbeat); once the
// heartbeats are in, a create goes to the host with the fewest rooms of
// the kind, a tie to the lowest name; a node that does not host the kind
// (gw) never gets one.
func TestRoomPlacement(t *testing.T) {
	gw, _, _ := roomsCluster(t)
	alice := newMember(t, gw, "alice")
	count := map[string]int{}
	for range 4 {
		count[nodeOf(t, alice.make(t, "arena"))]++
	}
	if count["svc-1"] == 0 || count["svc-2"] == 0 || count["svc-1"]+count["svc-2"] != 4 {
		t.Fatalf("a burst of 4 creates placed %v, want both service nodes used", count)
	}
	time.Sleep(3 * heartbeat) // every host's heartbeat says its count now
	want := "svc-1"
	if count["svc-2"] < count["svc-1"] {
		want = "svc-2"
	}
	if got := nodeOf(t, alice.make(t, "arena")); got != want {
		t.Fatalf("with %v a create went to %s, want %s", count, got, want)
	}
}

// TestRoomNodeLost is §11.4: the room's node dies; the gateway binds its
// members home with END room_lost; home's client_bound hears it.
func TestRoomNodeLost(t *testing.T) {
	gw, s1, s2 := roomsCluster(t)
	alice := newMember(t, gw, "alice")
	room := alice.make(t, "arena")
	ctx, cancel := joinCtx()
	defer cancel()
	if err := alice.room.Join(ctx, room, nil); err != nil {
		t.Fatal(err)
	}
	host := hostOf(t, room, s1, s2)
	host.kill(t)
	within(t, 3*nodeTimeout+2*time.Second, "END room_lost", func() bool {
		reason, _, _ := alice.room.End()
		return !alice.room.In() && reason == "room_lost"
	})
	alice.home(t)
	gw.Logs.WaitFor(t, "home again", "player_id", "alice", "reason", "room_lost")
}

// TestRoomDuplicateLogin is §11.3: a bind into a room keeps the player's
// hold with its home shard, so a second login kicks the session out of the
// room (it leaves with kicked).
func TestRoomDuplicateLogin(t *testing.T) {
	gw, s1, s2 := roomsCluster(t)
	alice := newMember(t, gw, "alice")
	room := alice.make(t, "arena")
	ctx, cancel := joinCtx()
	defer cancel()
	if err := alice.room.Join(ctx, room, nil); err != nil {
		t.Fatal(err)
	}
	newMember(t, gw, "alice")
	host := hostOf(t, room, s1, s2)
	host.Logs.WaitFor(t, "room_leave", "player_id", "alice", "reason", "kicked")
}

// TestQueueHostedOnce is §9.1: a second node hosting a queue is refused
// at start, naming the first.
func TestQueueHostedOnce(t *testing.T) {
	port := startNATS(t).port
	s1 := startNode(t, roomsNode(t, "svc-1", "[arena, duel_room]", "[duel]", false, port))
	waitReady(t, s1)
	_, err := tryNode(t, roomsNode(t, "svc-2", "[arena, duel_room]", "[duel]", false, port))
	if err == nil || !strings.Contains(err.Error(), "cluster: match queue duel is already hosted by node svc-1") {
		t.Fatalf("a second host of queue duel: %v", err)
	}
}

// edited is s with old replaced by new in its config, for one test's
// variation of roomsNode.
func edited(t *testing.T, s nodeSpec, old, new string) nodeSpec {
	t.Helper()
	if !strings.Contains(s.yaml, old) {
		t.Fatalf("%q is not in the config of %s", old, s.name)
	}
	s.yaml = strings.Replace(s.yaml, old, new, 1)
	return s
}

// TestRoomSecondPick is §3.2's second pick: svc-1's queue fills svc-1
// with a duel_room (max_rooms 1) and gw, still counting svc-1 empty by
// its last heartbeat (a long one here), places a create there; svc-1
// refuses it as full and the create goes to svc-2 at once. The next
// finds both full: busy, not unavailable.
func TestRoomSecondPick(t *testing.T) {
	port := startNATS(t).port
	spec := func(name, services, queues string, gateway bool) nodeSpec {
		s := roomsNode(t, name, services, queues, gateway, port)
		s = edited(t, s, "heartbeat: "+heartbeat.String(), "heartbeat: 3s")
		s = edited(t, s, "node_timeout: "+nodeTimeout.String(), "node_timeout: 9s")
		return edited(t, s, "script: "+filepath.Join(dataDir(t), "rooms_match.lua")+"\n    room: {tick_hz: 20}",
			"script: "+filepath.Join(dataDir(t), "rooms_match.lua")+"\n    room: {tick_hz: 20, max_rooms: 1}")
	}
	gw := startNode(t, spec("gw", "[lobby]", "", true))
	s1 := startNode(t, spec("svc-1", "[arena, duel_room]", "[duel]", false))
	s2 := startNode(t, spec("svc-2", "[arena, duel_room]", "[]", false))
	waitReady(t, gw, s1, s2)

	carol, dave := newMember(t, gw, "carol"), newMember(t, gw, "dave")
	for _, m := range []*member{carol, dave} {
		var out struct{ Ticket string }
		call(t, m.c, lobbyPlay, map[string]any{"queue": "duel"}, &out)
	}
	var e struct{ Event, Room string }
	within(t, 5*time.Second, "the matched push", func() bool {
		carol.mu.Lock()
		defer carol.mu.Unlock()
		return len(carol.push) > 0 && json.Unmarshal(carol.push[0], &e) == nil
	})
	if nodeOf(t, e.Room) != "svc-1" {
		t.Fatalf("the match's room %s, want it on svc-1 (its queue's node, a tie)", e.Room)
	}
	alice := newMember(t, gw, "alice")
	if got := nodeOf(t, alice.make(t, "duel_room")); got != "svc-2" {
		t.Fatalf("a create with svc-1 full went to %s, want svc-2", got)
	}
	var made struct{ Room string }
	err := try(alice.c, lobbyMake, map[string]any{"kind": "duel_room"}, &made)
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("a create with both hosts full: %+v %v, want busy (full)", made, err)
	}
}

// TestRoomDraining is §3.2 and §10.3: a node that starts its drain says
// so at once, and every create from then on goes to the other host, even
// where the drainer has fewer rooms of the kind.
func TestRoomDraining(t *testing.T) {
	gw, s1, _ := roomsCluster(t)
	alice := newMember(t, gw, "alice")
	// A room on svc-1 (the tie's lowest name) whose draining hook holds
	// svc-1's drain open for a while.
	var made struct{ Room string }
	call(t, alice.c, lobbyMake, map[string]any{"kind": "duel_room", "params": map[string]int{"drain_ms": 1500}}, &made)
	if nodeOf(t, made.Room) != "svc-1" {
		t.Fatalf("room %s, want it on svc-1", made.Room)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s1.Stop() }()
	s1.Logs.WaitFor(t, "room draining", "room", made.Room)
	for i := range 3 {
		if got := nodeOf(t, alice.make(t, "arena")); got != "svc-2" {
			t.Fatalf("create %d during svc-1's drain went to %s, want svc-2", i, got)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
