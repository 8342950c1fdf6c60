-- arena: a real-time room kind (docs/rooms.md). The arena queue of the
-- config's match block makes one for 2 to 8 matched players (the player
-- service's `play` route queues a player); each player joins with the
-- token of its matched push, steers with `arena_move` inputs, and sees
-- everyone through the synced state:
--
--   state.size    = {w = 560, h = 400}          the field, in units (the page draws 1 unit a pixel)
--   state.star    = {x =, y =}                  touch it to score; it moves on
--   state.players = {[player_id] = {x =, y =, score =}}
--
-- One VM per room, so the module-level tables below are this room's.
-- Inputs are untrusted: an `arena_move` body {"dx": -1..1, "dy": -1..1}
-- only sets the direction the player holds; the tick moves every player at
-- SPEED whatever was sent, inside the field. A body of another shape
-- stops the player, and nothing a client sends can make a hook raise.
local M = {}

local W, H = 560, 400
local SPEED = 200  -- units a second
local REACH = 20   -- a player this close to the star takes it
local MAX_DT = 250 -- ms: after a stall, move no further than this at once

local dir = {}     -- player_id -> {dx, dy}: what the player last held
local slot_of = {} -- player_id -> spawn slot 1..8
local pending = {} -- player_id -> true: matched, seat not yet taken nor released

-- Spawn slots: eight points on an ellipse, so players start apart.
local spawn = {}
for i = 1, 8 do
  local a = (i - 1) * math.pi / 4
  spawn[i] = { x = math.floor(W / 2 + math.cos(a) * W * 0.35), y = math.floor(H / 2 + math.sin(a) * H * 0.35) }
end

local function place_star(room)
  room.state.star = { x = math.random(REACH, W - REACH), y = math.random(REACH, H - REACH) }
end

-- axis is one input component: a finite number clamped to -1..1, else 0.
local function axis(v)
  if type(v) ~= "number" or v ~= v then return 0 end
  if v > 1 then return 1 end
  if v < -1 then return -1 end
  return v
end

local function clamp(v, lo, hi)
  if v < lo then return lo end
  if v > hi then return hi end
  return v
end

-- close_if_done closes a room that nobody is in and nobody is coming to,
-- rather than waiting out idle_close.
local function close_if_done(room)
  if next(pending) == nil and #room:members() == 0 then
    room:close("everyone left")
  end
end

function M.room_init(ctx, params)
  math.randomseed(shield.now())
  local room = ctx.room
  room.state.size = { w = W, h = H }
  room.state.players = {}
  place_star(room)
  local players = type(params) == "table" and params.players
  if type(players) == "table" then
    for _, p in ipairs(players) do
      if type(p) == "table" and type(p.player_id) == "string" then pending[p.player_id] = true end
    end
  end
end

-- Only matched players come in: their join carries the seat the queue
-- reserved (shield.room.join with the matched push's token). A tokenless
-- join is refused, so no one walks into a match they were not put in.
function M.room_join(ctx, client, meta, seat)
  if seat == nil then
    return false, "arena.seat_required", "the arena seats matched players only: send play and join with the token"
  end
  local pid = client.player_id
  local slot = 1
  local taken = {}
  for _, s in pairs(slot_of) do taken[s] = true end
  while taken[slot] and slot < #spawn do slot = slot + 1 end
  slot_of[pid] = slot
  pending[pid] = nil
  dir[pid] = { 0, 0 }
  ctx.room.state.players[pid] = { x = spawn[slot].x, y = spawn[slot].y, score = 0 }
  shield.log.info("arena join", "player_id", pid, "slot", slot)
  return true
end

function M.room_tick(ctx, tick, inputs)
  local room = ctx.room
  local players = room.state.players
  -- The last input of each player this tick is its direction from now on.
  for _, input in ipairs(inputs) do
    local body = input.body
    local d = { 0, 0 }
    if type(body) == "table" then
      local dx, dy = axis(body.dx), axis(body.dy)
      local len = math.sqrt(dx * dx + dy * dy)
      if len > 1 then dx, dy = dx / len, dy / len end -- a diagonal is no faster
      d = { dx, dy }
    end
    if players[input.player_id] then dir[input.player_id] = d end
  end
  local step = SPEED * math.min(room.dt, MAX_DT) / 1000
  local star = room.state.star
  -- By join time, so that two players reaching the star in one tick
  -- resolve the same way every time: the earlier joiner takes it.
  for _, m in ipairs(room:members()) do
    local p, d = players[m.player_id], dir[m.player_id]
    if p and d and (d[1] ~= 0 or d[2] ~= 0) then
      p.x = clamp(math.floor(p.x + d[1] * step + 0.5), 0, W)
      p.y = clamp(math.floor(p.y + d[2] * step + 0.5), 0, H)
    end
    if p and (p.x - star.x) ^ 2 + (p.y - star.y) ^ 2 <= REACH * REACH then
      p.score = p.score + 1
      place_star(room)
      star = room.state.star
    end
  end
end

function M.room_leave(ctx, member, reason)
  local pid = member.player_id
  ctx.room.state.players[pid] = nil
  dir[pid], slot_of[pid] = nil, nil
  shield.log.info("arena leave", "player_id", pid, "reason", reason)
  close_if_done(ctx.room)
end

-- A matched player who never came (or whose matched push could not be
-- delivered): the others play on without them.
function M.room_seat_released(ctx, player_id, reason)
  pending[player_id] = nil
  shield.log.info("arena seat released", "player_id", player_id, "reason", reason)
  close_if_done(ctx.room)
end

function M.room_close(ctx, reason)
  shield.log.info("arena closed", "reason", reason)
end

return M
