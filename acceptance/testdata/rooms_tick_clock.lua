-- The room kind of rooms_tick_test.go: it records every tick (its number, room.dt and when it
-- ran) and, once asked to (stall), holds its VM 180 ms from a timer 25 ms after the next tick.
local M = {}
local log = shield.array()
local armed = false
local hold = nil

function M.room_tick(ctx, tick, inputs)
  log[#log + 1] = { tick = tick, dt = ctx.room.dt, at = shield.now() }
  if armed then
    armed = false
    local after = tick
    shield.timeout(25, function()
      local start = shield.now()
      while shield.now() < start + 180 do end
      hold = { after = after, start = start, stop = shield.now() }
    end)
  end
end

-- ticks: the record so far, and the hold once it is over.
function M.ticks(ctx)
  return { log = log, hold = hold }
end

function M.stall(ctx)
  armed = true
  return { armed = true }
end

return M
