-- The room kind of rooms_join_refused_test.go: room_join gives the verdict
-- the join's meta names (docs/rooms.md §4.1), and every join is logged.
local M = {}

local released = false

local verdicts = {
  accept = function() return true end,
  refuse = function() return false, "door.closed", "the door is closed" end,
  refuse_bare = function() return false end,
  refuse_system = function() return false, "client_rpc.room_full", "forged" end,
  refuse_badcode = function() return false, "Not A Code", "no" end,
  none = function() end,
  ["nil"] = function() return nil end,
  string = function() return "yes" end,
  number = function() return 1 end,
  table = function() return { ok = true } end,
  raise = function() shield.error("door.locked", "the door is locked") end,
  plain = function() error("kaboom") end,
  -- held: the join waits in room_join (its seat held) until release runs,
  -- 10 s at most.
  held = function()
    for _ = 1, 400 do
      if released then return true end
      shield.sleep(25)
    end
    return false, "door.never_released", "release never came"
  end,
}

function M.room_init(ctx, params)
  ctx.room.state.name = params.name
end

function M.room_join(ctx, client, meta)
  local verdict = type(meta) == "table" and meta.verdict or "accept"
  shield.log.info("room_join ran", "player_id", client.player_id, "verdict", verdict)
  return verdicts[verdict]()
end

function M.room_leave(ctx, member, reason)
  shield.log.info("left door", "player_id", member.player_id, "reason", reason)
end

function M.shut(ctx)
  ctx.room:close("shut by the test")
end

function M.release(ctx)
  released = true
end

return M
