-- player: one VM per shard (instances: 2); a player's session and calls
-- addressed {service = "player", key = player_id} reach the same VM.
--
-- Each player's profile (last room and position, number of moves) is kept
-- in the kv bucket "players" under the player_id, so it survives a
-- restart; the VM that owns the player caches it while the player is on.
-- Without storage the game still plays, and forgets on restart.
local M = {}

local BUCKET = "players"
local room_of = {}  -- player_id -> room name
local profiles = {} -- player_id -> {room =, x =, y =, moves =}, while online
local persist = true

function M.init(ctx)
  -- Probe the store once: a config without storage (the tests of other
  -- parts serve this game without one) plays from memory only.
  local ok, err = pcall(shield.kv.keys, BUCKET, "~")
  if not ok then
    persist = false
    shield.log.warn("player profiles are not persisted", "error", tostring(err))
  end
  shield.log.info("player shard ready", "persist", persist)
end

-- profile returns the player's profile: cached, stored, or new.
local function profile(pid)
  local p = profiles[pid]
  if p then return p end
  if persist then
    local ok, stored = pcall(shield.kv.get, BUCKET, pid)
    if ok and type(stored) == "table" then p = stored end
    if not ok then shield.log.warn("profile not loaded", "player_id", pid, "error", tostring(stored)) end
  end
  p = p or { moves = 0 }
  profiles[pid] = p
  return p
end

-- save writes the player's profile. Two puts in flight at once may land
-- in either order, so a player has at most one: a save that finds one in
-- flight marks the profile dirty, and the put in flight writes it again
-- when it returns. A failure is logged, and the game goes on (the next
-- move writes it again).
local saving = {} -- player_id -> shield.now() when its put went out
local dirty = {}  -- player_id -> true: changed while a put was in flight
local function save(pid, p)
  if not persist then return end
  local since = saving[pid]
  -- A put whose handler ran out of budget never comes back to clear its
  -- mark: after a handler_timeout it no longer counts.
  if since and shield.now() - since < 15000 then
    dirty[pid] = true
    return
  end
  repeat
    dirty[pid] = nil
    saving[pid] = shield.now()
    -- The latest profile: the player may have logged in again meanwhile.
    local ok, err = pcall(shield.kv.put, BUCKET, pid, profiles[pid] or p)
    if not ok then shield.log.warn("profile not saved", "player_id", pid, "error", tostring(err)) end
  until not dirty[pid]
  saving[pid] = nil
end

-- join_room {room = "lobby"} -> {room = "lobby", members = 2}
function M.join_room(ctx, client, req)
  local room = type(req) == "table" and req.room
  if type(room) ~= "string" or room == "" then
    shield.error("player.bad_request", "room is required")
  end
  local pid = client.player_id
  local old = room_of[pid]
  if old and old ~= room then
    shield.send("room", "leave", old, pid, client.session_id, client.gateway)
  end
  local members = shield.call("room", "join", room, shield.client.ref(client))
  room_of[pid] = room
  local p = profile(pid)
  p.room = room
  save(pid, p)
  return { room = room, members = members }
end

-- move {x = 1, y = 2} -> {}; everyone in the room gets a position push.
function M.move(ctx, client, req)
  local pid = client.player_id
  local room = room_of[pid]
  if not room then
    shield.error("player.not_in_room", "join a room first")
  end
  local x, y = tonumber(req.x) or 0, tonumber(req.y) or 0
  shield.send("room", "move", room, pid, x, y)
  local p = profile(pid)
  p.x, p.y, p.moves = x, y, (p.moves or 0) + 1
  save(pid, p)
  return {}
end

-- profile {} -> {player_id =, room =, x =, y =, moves =}: what the game
-- remembers of the player, across restarts when storage is configured.
function M.profile(ctx, client, req)
  local p = profile(client.player_id)
  return { player_id = client.player_id, room = p.room, x = p.x, y = p.y, moves = p.moves or 0 }
end

function M.client_disconnected(ctx, client, reason)
  local pid = client.player_id
  local room = room_of[pid]
  if room then
    shield.send("room", "leave", room, pid, client.session_id, client.gateway)
    room_of[pid] = nil
  end
  profiles[pid] = nil -- stored already; loaded again at the next login
end

return M
