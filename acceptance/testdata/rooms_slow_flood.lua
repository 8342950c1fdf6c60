-- The room kind of rooms_slow_test.go: every tick rewrites a big state
-- (16 strings of 2000 bytes, each changed) and reports it to every member,
-- as JSON, on the report route, just before the runtime syncs it.
local M = {}

local blobs, size = 16, 2000

function M.room_init(ctx, params)
  ctx.room.state.tick = 0
end

function M.room_tick(ctx, tick, inputs)
  local st = ctx.room.state
  st.tick = tick
  st.blobs = st.blobs or {}
  for k = 1, blobs do
    st.blobs[string.format("b%02d", k)] = string.rep(string.char(97 + (tick + k) % 26), size)
  end
  local refs = {}
  for _, m in ipairs(ctx.room:members()) do refs[#refs + 1] = m.ref end
  if #refs > 0 then shield.client_rpc.report(refs, { tick = tick, state = st }) end
end

function M.room_leave(ctx, member, reason)
  shield.log.info("left flood", "player_id", member.player_id, "reason", reason)
end

return M
