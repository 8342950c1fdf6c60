-- A room kind of rooms_resume_test.go and rooms_leave_test.go: each
-- member's last x, the tick when the room is made with name "ticking",
-- and a log line per hook so the tests see each membership's life.
local M = {}
local ticking = false
function M.room_init(ctx, params)
  ticking = params.name == "ticking"
  ctx.room.state.pos = {}
end
function M.room_tick(ctx, tick, inputs)
  for _, in_ in ipairs(inputs) do
    ctx.room.state.pos[in_.player_id] = in_.body.x
  end
  if ticking then ctx.room.state.t = tick end
end
function M.room_suspended(ctx, member)
  shield.log.info("room_suspended", "player_id", member.player_id, "suspended", tostring(member.suspended))
end
function M.room_resumed(ctx, member)
  shield.log.info("room_resumed", "player_id", member.player_id, "suspended", tostring(member.suspended))
end
function M.room_leave(ctx, member, reason)
  ctx.room.state.pos[member.player_id] = nil
  shield.log.info("room_leave", "player_id", member.player_id, "reason", reason)
end
-- out is a room route: the member asks to be removed.
function M.out(ctx, client, req)
  return { removed = ctx.room:remove(client, "asked to go") }
end
return M
