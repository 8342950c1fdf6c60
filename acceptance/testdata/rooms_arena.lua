-- A room kind of rooms_join_test.go: each member's last x, and who is in.
local M = {}
function M.room_init(ctx, params)
  ctx.room.state.name = params.name
  ctx.room.state.pos = {}
end
function M.room_join(ctx, client, meta)
  if client.player_id == "mallory" then return false, "arena.banned", "not you" end
  return true
end
function M.room_tick(ctx, tick, inputs)
  for _, in_ in ipairs(inputs) do
    ctx.room.state.pos[in_.player_id] = in_.body.x
  end
  ctx.room.state.members = #ctx.room:members()
end
function M.room_leave(ctx, member, reason)
  ctx.room.state.pos[member.player_id] = nil
  shield.log.info("left room", "player_id", member.player_id, "reason", reason)
end
return M
