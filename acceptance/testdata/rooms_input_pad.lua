-- The room kinds of rooms_input_test.go (pad and gate run this script). room_tick logs every
-- input it is given, in order, with its tick and its index in the tick's inputs, and pushes each
-- one back to its sender on "ticked" (gate only, which owns that route). A member's gate_hold
-- request arms a hold: a timer just after the next tick pushes "holding" to it, then holds the
-- VM 300 ms, so that what the client sends meanwhile is taken in one go before the tick after.
-- A member's pad_kick (pad) holds the VM 300 ms, then removes the member (room:remove); with
-- meta.slow, room_join holds the VM 100 ms.
local M = {}
local log = shield.array()
local armed = nil

local function busy(ms)
  local stop = shield.now() + ms
  while shield.now() < stop do end
end

function M.room_join(ctx, client, meta)
  if type(meta) == "table" and meta.slow then busy(100) end
  return true
end

function M.room_tick(ctx, tick, inputs)
  for i, input in ipairs(inputs) do
    log[#log + 1] = { tick = tick, i = i, player_id = input.player_id, ref_player = input.ref.player_id,
      seq = input.seq, n = input.body.n, route = input.route, route_id = input.route_id, at = input.at }
    if ctx.room.kind == "gate" then
      shield.client_rpc.ticked(input.ref, { tick = tick, n = input.body.n, seq = input.seq })
    end
  end
  if armed then
    local ref = armed
    armed = nil
    shield.timeout(0, function()
      shield.client_rpc.holding(ref, { tick = tick })
      busy(300)
    end)
  end
end

function M.room_leave(ctx, member, reason)
  shield.log.info("left room", "player_id", member.player_id, "reason", reason)
end

function M.pad_kick(ctx, client, req)
  busy(300)
  ctx.room:remove(client, "kicked by the test")
  return {}
end

function M.gate_hold(ctx, client, req)
  armed = shield.client.ref(client)
  return {}
end

-- inputs (asked through the lobby): the log, the last tick, and each member's inputs_dropped.
function M.inputs(ctx)
  local dropped = {}
  for _, m in ipairs(ctx.room:members()) do dropped[m.player_id] = m.inputs_dropped end
  return { log = log, tick = ctx.room.tick, dropped = dropped }
end

return M
