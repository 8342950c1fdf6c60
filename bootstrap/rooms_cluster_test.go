package bootstrap_test

import (
	"testing"

	"github.com/shieldrpc/shield/bootstrap"
)

// TestRoomsRefusedInCluster: until docs/rooms.md §16 step 7 builds rooms
// across nodes, a config with a room kind or a match queue and a cluster
// block fails to compile (and so gateway check and the start), at the
// cluster block's line; the same rooms without cluster compile.
func TestRoomsRefusedInCluster(t *testing.T) {
	noLeak(t)
	game := "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth}\nactors:\n" + authActor +
		"  - name: arena\n    script: arena.lua\n    room: {}\n"
	scripts := map[string]string{"auth.lua": authLua, "arena.lua": "return {}\n"}
	rep, err := bootstrap.Compile(writeGame(t, game, scripts), quiet())
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()

	path := writeGame(t, game+"cluster: {embedded: \"127.0.0.1:4222\"}\n", scripts)
	expectErrors(t, compileErrors(t, path, quiet()),
		[]string{path + ":11:", "cluster: rooms and match queues do not run in a cluster yet (docs/rooms.md §16 step 7)"})
}
