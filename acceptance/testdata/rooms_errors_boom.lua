-- The room kinds of rooms_errors_test.go (boom, boomgo, boomloop, slow run this script).
-- room_tick keeps room.state.clock at the tick and room.state.recent at the last three ticks (a
-- set and a removal each tick) and fails its tick when an input asks: {boom = true} raises,
-- {spin = true} never returns (past tick_budget), {bad = true} leaves a function in room.state
-- (the walk fails). With params.always, every tick raises. Each failing tick first logs
-- "tick failing" with its number.
local M = {}

function M.room_init(ctx, params)
  ctx.room.state.recent = {}
  ctx.room.state.clock = 0
end

local function failing(tick, how)
  shield.log.warn("tick failing", "tick", tick, "how", how)
end

function M.room_tick(ctx, tick, inputs)
  local st = ctx.room.state
  st.clock = tick
  st.recent[tick] = true
  st.recent[tick - 3] = nil
  if ctx.room.params and ctx.room.params.always then
    failing(tick, "always")
    error("always at tick " .. tick)
  end
  for _, input in ipairs(inputs) do
    local b = input.body
    if b.boom then
      st.failed_at = tick
      failing(tick, "boom")
      error("boom at tick " .. tick)
    elseif b.spin then
      failing(tick, "spin")
      while true do end
    elseif b.bad then
      failing(tick, "bad")
      st.cb = function() end
    end
  end
end

return M
