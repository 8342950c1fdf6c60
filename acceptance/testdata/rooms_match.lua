-- The room kind of rooms_match_test.go (docs/rooms.md §9): what room_join saw of each seat, the
-- seats released, and room:reserve, for the test to ask through the lobby; made with params.drain_ms, its
-- draining hook holds the node's drain open that long (cluster TestRoomDraining).
local M = {}
local seen, released = {}, {}

function M.room_init(ctx, params)
  ctx.room.state.queue = params and params.queue or "none"
end

function M.room_join(ctx, client, meta, seat)
  seen[client.player_id] = seat and { token = seat.token, queue = seat.queue or "", props = seat.props } or "none"
  return true
end

function M.room_seat_released(ctx, player_id, reason)
  released[player_id] = reason
end

function M.draining(ctx)
  local ms = ctx.room.params and ctx.room.params.drain_ms
  if ms then
    shield.log.info("room draining", "room", ctx.room.id)
    local stop = shield.now() + ms
    while shield.now() < stop do end
  end
end

function M.info(ctx)
  local members = { "" } -- never empty: an empty table is a JSON object
  for _, m in ipairs(ctx.room:members()) do
    members[#members + 1] = m.player_id
    if m.seat then members[#members] = m.player_id .. ":" .. m.seat.token end
  end
  return { params = ctx.room.params, seen = seen, released = released, members = members }
end

function M.reserve(ctx, arg)
  return { token = ctx.room:reserve(arg.player, arg.ttl_ms) }
end

return M
