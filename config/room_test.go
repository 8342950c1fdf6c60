package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
)

// The room snippets add a second actor, arena, after authHead:
//
//	7   - name: arena
//	8     script: arena.lua
//	9     room: ...
const roomHead = authHead + "  - name: arena\n    script: arena.lua\n"

// matchHead makes arena a room kind of 8 members (line 9) and opens the
// queues list: its first item is on line 12.
const matchHead = roomHead + "    room: {max_members: 8}\nmatch:\n  queues:\n"

// roomKey is a room block setting one key, on line 10.
func roomKey(kv string) string { return roomHead + "    room:\n      " + kv + "\n" }

// arenaErr is the expected error at line 10 about arena.
func arenaErr(msg string) [][]string {
	return [][]string{{file + ":10:", `actor "arena": ` + msg}}
}

// queueErr is the expected error of a queue on line 12.
func queueErr(msg string) [][]string { return [][]string{{file + ":12:", msg}} }

// roomErrCases are the messages of docs/rooms.md §2, one case each. They
// run in TestParseErrors with the rest.
var roomErrCases = []errCase{
	// 2.1: each key's range.
	{"room tick_hz", roomKey("tick_hz: 61"), arenaErr("room.tick_hz: 61 is out of range 1..60")},
	{"room max_members", roomKey("max_members: 0"), arenaErr("room.max_members: 0 is out of range 1..1024")},
	{"room input_queue", roomKey("input_queue: 0"), arenaErr("room.input_queue: 0 is out of range 1..1024")},
	{"room idle_close", roomKey("idle_close: -1s"), arenaErr(`room.idle_close: must not be negative, got "-1s"`)},
	{"room reconnect_grace", roomKey("reconnect_grace: -5s"), arenaErr(`room.reconnect_grace: must not be negative, got "-5s"`)},
	{"room tick_budget zero", roomKey("tick_budget: 0s"), arenaErr(`room.tick_budget: must be above zero, got "0s"`)},
	{"room tick_budget above", roomKey("tick_budget: 2s"), arenaErr("room.tick_budget: 2s is above the limit of 1s")},
	{"room on_tick_error", roomKey("on_tick_error: stop"), arenaErr(`room.on_tick_error: "stop" is not one of close, continue`)},
	{"room history", roomKey("history: 0"), arenaErr("room.history: 0 is out of range 1..1024")},
	{"room max_frame_bytes", roomKey("max_frame_bytes: 4096"), arenaErr("room.max_frame_bytes: 4096 is out of range 8192..1048576")},
	{"room max_state_values", roomKey("max_state_values: 0"), arenaErr("room.max_state_values: 0 is out of range 1..1000000")},
	{"room max_rooms", roomKey("max_rooms: 0"), arenaErr("room.max_rooms: 0 is out of range 1..100000")},
	// 2.1: the generic messages.
	{"room not an integer", roomKey("tick_hz: fast"), arenaErr(`room.tick_hz: must be an integer, got the string "fast"`)},
	{"room bad duration", roomKey("idle_close: soon"), arenaErr(`room.idle_close: "soon" is not a duration such as "15s" or "250ms"`)},
	{"room unknown key", roomKey("tick_rate: 30"), arenaErr(`room: unknown key "tick_rate" (did you mean "tick_hz"?)`)},
	{"room not a mapping", roomHead + "    room: [20]\n",
		[][]string{{file + ":9:", `actor "arena": room: must be a mapping, got a list`}}},
	// 2.1: across keys.
	{"room with instances", roomHead + "    instances: 2\n    room: {}\n",
		[][]string{{file + ":7:", `actor "arena": instances: a room service runs one VM per room: leave instances out`}}},
	{"room frame does not fit a listener",
		"network:\n  listeners:\n    - {name: web, address: \"127.0.0.1:7000\", entry_service: auth, protocol: {envelope: lenprefix, max_frame_bytes: 16384}}\n" +
			"actors:\n  - name: auth\n    script: auth.lua\n  - name: arena\n    script: arena.lua\n    room: {}\n",
		[][]string{{file + ":9:", `actor "arena": room.max_frame_bytes: 16384 does not fit listener "web": a state frame there is up to 21928 bytes, above its protocol.max_frame_bytes 16384`}}},
	{"room frame does not fit idlen",
		"network:\n  listeners:\n    - {name: game, address: \"127.0.0.1:7000\", entry_service: auth, protocol: {max_frame_bytes: 16399}}\n" +
			"actors:\n  - name: auth\n    script: auth.lua\n  - name: arena\n    script: arena.lua\n    room: {}\n",
		[][]string{{file + ":9:", `actor "arena": room.max_frame_bytes: 16384 does not fit listener "game": a state frame there is up to 16400 bytes, above its protocol.max_frame_bytes 16399`}}},
	{"room ids too long", roomHead + "    room: {}\nnode: {name: " + strings.Repeat("n", 240) + "}\n",
		[][]string{{file + ":9:", `actor "arena": room: ids of "arena" rooms on node "nnnn`, `would be up to 263 bytes, more than 255: shorten the actor's name or node.name`}}},

	// 2.2: room_input.
	{"room_input owner without room", routesHead + "        - {id: 1001, name: login, room_input: true}\n",
		[][]string{{file + ":9:", `actor "auth": route 1001 (login): room_input: applies only to routes owned by a room service; owner "auth" has no room block`}}},
	{"room_input s2c", roomHead + "    room: {}\n    rpc: {routes: [{id: 3001, name: arena_move, room_input: true, direction: s2c}]}\n",
		[][]string{{file + ":10:", `actor "arena": route 3001 (arena_move): room_input: applies to c2s routes only, not s2c`}}},
	{"room_input bidi", roomHead + "    room: {}\n    rpc: {routes: [{id: 3001, name: arena_move, room_input: true, direction: bidirectional}]}\n",
		[][]string{{file + ":10:", `actor "arena": route 3001 (arena_move): room_input: applies to c2s routes only, not bidi`}}},
	{"room_input with a binding", roomHead + "    room: {}\n    rpc: {routes: [{id: 3001, name: arena_move, room_input: true, binding: move}]}\n",
		[][]string{{file + ":10:", `actor "arena": route 3001 (arena_move): binding: a room_input route has no handler: leave binding out`}}},
	{"room_input not a bool", roomHead + "    room: {}\n    rpc: {routes: [{id: 3001, name: arena_move, room_input: yes please, binding: move}]}\n",
		[][]string{{file + ":10:", `actor "arena": route 3001 (arena_move): room_input: must be true or false, got the string "yes please"`}}},

	// 2.3: match.queues.
	{"queue name shape", matchHead + "    - {name: Duel, room: arena}\n",
		queueErr(`match.queues[0].name: "Duel" may hold only lowercase letters, digits and '_', starting with a letter`)},
	{"queue name twice", matchHead + "    - {name: duel, room: arena}\n    - {name: duel, room: arena}\n",
		[][]string{{file + ":13:", `queue "duel": name used twice (first at line 12)`}}},
	{"queue name and room required", matchHead + "    - {min_players: 2}\n",
		[][]string{{file + ":12:", "match.queues[0]: name is required"}, {file + ":12:", "match.queues[0]: room is required"}}},
	{"queue room not a room kind", matchHead + "    - {name: duel, room: auth}\n",
		queueErr(`match.queues[0].room: "auth" is not a room service (an actor with a room block)`)},
	{"queue room not an actor", matchHead + "    - {name: duel, room: player}\n",
		queueErr(`match.queues[0].room: "player" is not a room service (an actor with a room block)`)},
	{"queue min_players", matchHead + "    - {name: duel, room: arena, min_players: 0}\n",
		queueErr("match.queues[0].min_players: 0 is out of range 1..1024")},
	{"queue min above max", matchHead + "    - {name: duel, room: arena, min_players: 4}\n",
		queueErr("match.queues[0]: min_players 4 is above max_players 2")},
	{"queue max above max_members", matchHead + "    - {name: duel, room: arena, max_players: 10}\n",
		queueErr(`match.queues[0]: max_players 10 is above room.max_members 8 of "arena"`)},
	{"queue fill_wait negative", matchHead + "    - {name: duel, room: arena, fill_wait: -1s}\n",
		queueErr(`match.queues[0].fill_wait: must not be negative, got "-1s"`)},
	{"queue fill_wait above", matchHead + "    - {name: duel, room: arena, fill_wait: 11m}\n",
		queueErr("match.queues[0].fill_wait: 11m is above the limit of 600s")},
	{"queue interval zero", matchHead + "    - {name: duel, room: arena, interval: 0s}\n",
		queueErr(`match.queues[0].interval: must be above zero, got "0s"`)},
	{"queue interval above", matchHead + "    - {name: duel, room: arena, interval: 20s}\n",
		queueErr("match.queues[0].interval: 20s is above the limit of 10s")},
	{"queue ticket_ttl zero", matchHead + "    - {name: duel, room: arena, ticket_ttl: 0s}\n",
		queueErr(`match.queues[0].ticket_ttl: must be above zero, got "0s"`)},
	{"queue ticket_ttl above", matchHead + "    - {name: duel, room: arena, ticket_ttl: 2h}\n",
		queueErr("match.queues[0].ticket_ttl: 2h is above the limit of 3600s")},
	{"queue reservation_ttl zero", matchHead + "    - {name: duel, room: arena, reservation_ttl: 0s}\n",
		queueErr(`match.queues[0].reservation_ttl: must be above zero, got "0s"`)},
	{"queue reservation_ttl above", matchHead + "    - {name: duel, room: arena, reservation_ttl: 10m}\n",
		queueErr("match.queues[0].reservation_ttl: 10m is above the limit of 300s")},
	{"queue max_tickets", matchHead + "    - {name: duel, room: arena, max_tickets: 0}\n",
		queueErr("match.queues[0].max_tickets: 0 is out of range 1..1000000")},
	{"queue unknown key", matchHead + "    - {name: duel, room: arena, players: 2}\n",
		queueErr(`match.queues[0]: unknown key "players"`)},

	// 2.3: node.queues and node.services.
	{"node.queues not a queue", matchHead + "    - {name: duel, room: arena}\ncluster: {embedded: \"127.0.0.1:4222\"}\nnode:\n  queues:\n    - solo\n",
		[][]string{{file + ":16:", `node.queues: "solo" is not a queue of match.queues`}}},
	{"node.queues twice", matchHead + "    - {name: duel, room: arena}\ncluster: {embedded: \"127.0.0.1:4222\"}\nnode:\n  queues:\n    - duel\n    - duel\n",
		[][]string{{file + ":17:", `node.queues: "duel" listed twice (first at line 16)`}}},
	{"node.queues without cluster", matchHead + "    - {name: duel, room: arena}\nnode:\n  queues: [duel]\n",
		[][]string{{file + ":14:", "node.queues applies in a cluster only: without cluster this node hosts every queue"}}},
	{"node.services room instance", roomHead + "    room: {}\ncluster: {embedded: \"127.0.0.1:4222\"}\nnode:\n  services: [auth, arena/0]\n",
		[][]string{{file + ":12:", `node.services: "arena/0": "arena" is a room service and has no instances: list it as "arena"`}}},
}

func init() { errCases = append(errCases, roomErrCases...) }

// TestRoomDefaults: an empty room block and a bare queue take the defaults
// of docs/rooms.md §2, and the tick budget follows tick_hz.
func TestRoomDefaults(t *testing.T) {
	src := roomHead + "    room: {}\n  - name: fast\n    script: fast.lua\n    room: {tick_hz: 60}\n" +
		"match:\n  queues:\n    - {name: duel, room: arena}\n"
	cfg, errs := config.Parse(file, []byte(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	arena := cfg.Actor("arena").Room
	want := config.Room{Line: arena.Line, TickHz: 20, MaxMembers: 16, InputQueue: 16, IdleClose: 30 * time.Second,
		ReconnectGrace: 30 * time.Second, TickBudget: 500 * time.Millisecond, OnTickError: "close", History: 64,
		MaxFrameBytes: 16384, MaxStateValues: 4096, MaxRooms: 1000}
	if *arena != want {
		t.Errorf("room: {} = %+v\nwant %+v", *arena, want)
	}
	if got := cfg.Actor("fast").Room.TickBudget; got != 10*(time.Second/60) {
		t.Errorf("tick_budget at 60 Hz = %v, want ten periods", got)
	}
	if cfg.Actor("auth").Room != nil || !cfg.HasRooms() {
		t.Errorf("auth has a room, or the config has none")
	}
	q := cfg.Match.Queues[0]
	wantQ := config.Queue{Line: q.Line, Name: "duel", Room: "arena", MinPlayers: 2, MaxPlayers: 2, FillWait: 5 * time.Second,
		Interval: 250 * time.Millisecond, TicketTTL: 60 * time.Second, ReservationTTL: 15 * time.Second, MaxTickets: 10000}
	if q != wantQ {
		t.Errorf("queue = %+v\nwant %+v", q, wantQ)
	}
	if !cfg.HostsQueue("duel") {
		t.Error("a node without a cluster hosts every queue")
	}
}

// TestRoomRoutesAndQueuesValid: what section 2 allows is accepted: a
// room_input route without a binding, a fill_wait of 0, node.queues in a
// cluster, a room kind listed by name in node.services.
func TestRoomRoutesAndQueuesValid(t *testing.T) {
	src := matchHead + "    - {name: duel, room: arena, fill_wait: 0s, max_players: 8}\n" +
		"cluster: {embedded: \"127.0.0.1:4222\"}\nnode:\n  services: [auth, arena]\n  queues: [duel]\n"
	src = strings.Replace(src, "room: {max_members: 8}",
		"room: {max_members: 8}\n    rpc: {routes: [{id: 3001, name: arena_move, room_input: true}, {id: 3002, name: ready, binding: ready}]}", 1)
	cfg, errs := config.Parse(file, []byte(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if r := cfg.Actor("arena").Routes[0]; !r.RoomInput || r.Binding != "" {
		t.Errorf("route 3001 = %+v", r)
	}
	if !cfg.HostsQueue("duel") || cfg.HostsQueue("other") {
		t.Error("node.queues [duel] hosts duel only")
	}
}

// TestRoomRestartNeeded: a changed room block reloads (rooms created after
// take it), adding or removing one restarts, and match never reloads.
func TestRoomRestartNeeded(t *testing.T) {
	base := matchHead + "    - {name: duel, room: arena}\n"
	parse := func(src string) *config.Config {
		t.Helper()
		cfg, errs := config.Parse(file, []byte(src))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return cfg
	}
	old := parse(base)
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"room key", strings.Replace(base, "max_members: 8", "max_members: 8, tick_hz: 30", 1), nil},
		{"room_input route", strings.Replace(base, "room: {max_members: 8}",
			"room: {max_members: 8}\n    rpc: {routes: [{id: 3001, name: arena_move, room_input: true}]}", 1), nil},
		{"queue", strings.Replace(base, "room: arena}", "room: arena, fill_wait: 1s}", 1), []string{"match"}},
		{"room removed", strings.Replace(strings.Replace(base, "    room: {max_members: 8}\n", "", 1), "match:\n  queues:\n    - {name: duel, room: arena}\n", "", 1),
			[]string{"match", "room of arena"}},
	} {
		got := config.RestartNeeded(old, parse(tc.src))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: RestartNeeded = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := config.RestartError("room of arena").Error(); got != "reload: room of arena changed; restart to change it" {
		t.Errorf("RestartError = %q", got)
	}
}
