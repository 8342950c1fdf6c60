package descriptor_test

import (
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// arena is a room kind, for snippets after head (lines 5-7).
const arena = "  - name: arena\n    script: arena.lua\n    room: {}\n"

// TestReservedRoomRoutes: a config with rooms or queues gets the routes of
// docs/rooms.md §8.1 in its table and its edge, owned by Shield, and a user
// route may not take their ids or names; a config without keeps every id.
func TestReservedRoomRoutes(t *testing.T) {
	plain := mergeOK(t, head+"  - name: auth\n    script: auth.lua\n    rpc: {routes: [{id: 65535, name: shield.x, binding: x}, {id: 65520, binding: y}]}\n")
	if plain.Len() != 2 {
		t.Fatalf("without rooms: %v, want the two user routes only", routeIDs(plain))
	}
	if e := plain.Edge().Lookup(65520); e == nil || e.Binary {
		t.Fatalf("without rooms, a user route 65520 is %+v, want it as declared (not Binary)", e)
	}

	want := []struct {
		id   uint32
		name string
		dir  config.Direction
	}{
		{descriptor.RouteRoomState, "shield.room.state", config.S2C},
		{descriptor.RouteRoomSync, "shield.room.sync", config.C2S},
		{descriptor.RouteRoomJoin, "shield.room.join", config.C2S},
		{descriptor.RouteRoomLeave, "shield.room.leave", config.C2S},
		{descriptor.RouteMatch, "shield.match", config.S2C},
	}
	for _, src := range []string{
		head + "  - name: auth\n    script: auth.lua\n    rpc: {routes: [{id: 1, name: login, binding: login}]}\n" + arena,
		// a queue alone does not make a config valid (its room must be a
		// kind), so queues are checked with their kind
		head + "  - name: auth\n    script: auth.lua\n" + arena + "match: {queues: [{name: duel, room: arena}]}\n",
	} {
		table := mergeOK(t, src)
		edge := table.Edge()
		for _, w := range want {
			r, ok := table.Route(w.id)
			if !ok || r.Name != w.name || r.Direction != w.dir || r.Owner != descriptor.ShieldOwner || !r.RequiresAuth || r.Binding != "" || !r.IsRoomRoute() {
				t.Errorf("route %d = %+v, want %s %s owned by shield", w.id, r, w.name, w.dir)
			}
			e := edge.Lookup(w.id)
			if e == nil || e.Name != w.name || e.Direction != w.dir || e.Owner != "shield" || !e.RequiresAuth || e.Action != config.DecodeLocal ||
				e.Binary != (w.id == descriptor.RouteRoomState) {
				t.Errorf("edge %d = %+v", w.id, e)
			}
			if edge.LookupName(w.name) != e {
				t.Errorf("edge name %s does not find route %d", w.name, w.id)
			}
		}
		if len(table.Owned("arena")) != 0 || len(table.Owned("auth")) > 1 {
			t.Errorf("the room routes are owned by an actor: %v", routeIDs(table))
		}
	}

	// A user route on a reserved id or name, once the config has rooms.
	for _, tc := range []struct{ route, msg string }{
		{"{id: 65520, name: mine, binding: x}", `actor "auth": route 65520 (mine): id 65520 is reserved for Shield's room routes (65520..65535) in a config with rooms`},
		{"{id: 65535, binding: x}", `actor "auth": route 65535: id 65535 is reserved for Shield's room routes (65520..65535) in a config with rooms`},
		{"{id: 7, name: shield.room.join, binding: x}", `actor "auth": route 7 (shield.room.join): name "shield.room.join": route names starting with "shield." are reserved in a config with rooms`},
	} {
		table, errs := merge(t, head+"  - name: auth\n    script: auth.lua\n    rpc: {routes: ["+tc.route+"]}\n"+arena)
		expectOne(t, errs, file+":7: "+tc.msg)
		if r, ok := table.Route(descriptor.RouteRoomState); !ok || r.Owner != descriptor.ShieldOwner {
			t.Errorf("%s: the reserved routes are missing: %v", tc.route, routeIDs(table))
		}
	}

	// Their owner's name, as an actor's, once the config has rooms.
	_, errs := merge(t, head+"  - name: auth\n    script: auth.lua\n"+arena+"  - name: shield\n    script: s.lua\n")
	expectOne(t, errs, file+`:10: actor "shield": actor name "shield" is reserved for Shield's room routes in a config with rooms`)
	mergeOK(t, head+"  - name: auth\n    script: auth.lua\n  - name: shield\n    script: s.lua\n")

	// typelen carries them: the ids fit 16 bits.
	typelen := "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, protocol: {envelope: typelen}}\nactors:\n"
	mergeOK(t, typelen+"  - name: auth\n    script: auth.lua\n"+arena)
}

// TestRoomInputCarried: the merge keeps a route's room_input.
func TestRoomInputCarried(t *testing.T) {
	table := mergeOK(t, head+"  - name: auth\n    script: auth.lua\n"+arena+"    rpc: {routes: [{id: 3001, name: arena_move, room_input: true}]}\n")
	if r, ok := table.Route(3001); !ok || !r.RoomInput || r.Owner != "arena" {
		t.Errorf("route 3001 = %+v", r)
	}
}
