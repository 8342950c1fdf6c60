package luavm_test

import (
	"strings"
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

// TestRoomCreateAndTick is the first room test (docs/rooms.md §16 step 4,
// in progress): shield.room.create makes a room whose room_init sees its
// params, ticks run on their grid and the state walk takes what they set,
// {room = id} reaches the room's methods, and shield.self names it.
func TestRoomCreateAndTick(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			luatest.ActorYAML("a", "", "\n        - {id: 1, name: go, binding: go, requires_auth: false}"),
			luatest.ActorYAML("arena", "room: {tick_hz: 20}", "")),
		"a.lua": `local M = {}
function M.go(ctx, client, req)
  local id = shield.room.create("arena", {n = 3})
  shield.sleep(300)
  local peek = shield.call({room = id}, "peek")
  local ok, err = pcall(shield.call, "arena", "peek")
  peek.plain = err.code
  return peek
end
return M`,
		"arena.lua": `local M = {}
function M.room_init(ctx, params) ctx.room.state.n = params.n ctx.room.state.ticks = 0 end
function M.room_tick(ctx, tick, inputs)
  ctx.room.state.ticks = tick
  local ok, err = pcall(shield.sleep, 1)
  ctx.room.state.sleep = tostring(err):find("cannot suspend inside room_tick", 1, true) ~= nil
end
function M.peek(ctx)
  local kind, inst, id = shield.self()
  return {id = ctx.room.id, n = ctx.room.state.n, ticks = ctx.room.state.ticks, tick = ctx.room.tick,
    same = (id == ctx.room.id and kind == "arena" and inst == -1 and ctx.instance == -1), sleep = ctx.room.state.sleep}
end
return M`,
	})
	id := w.Send(t, "a", 1, "{}")
	got := string(w.Await(t, id).Body)
	for _, want := range []string{`"n":3`, `"same":true`, `"sleep":true`, `"plain":"client_rpc.unavailable"`, `"id":"arena/`} {
		if !strings.Contains(got, want) {
			t.Fatalf("peek %s: no %s", got, want)
		}
	}
	if strings.Contains(got, `"tick":0`) || strings.Contains(got, `"tick":1,`) {
		t.Fatalf("peek %s: after 300 ms at 20 Hz, more than one tick should have run", got)
	}
}
