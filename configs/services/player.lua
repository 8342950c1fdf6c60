-- player: one VM per shard (instances: 2); a player's session and calls
-- addressed {service = "player", key = player_id} reach the same VM.
--
-- Each player's profile (last room and position, number of moves) is kept
-- in the kv bucket "players" under the player_id, so it survives a
-- restart; the VM that owns the player caches it while the player is on.
-- Without storage the game still plays, and forgets on restart.
--
-- `play` queues the player for the arena (a room kind, services/arena.lua):
-- the queue pushes the session itself when it is matched, and the client
-- joins the room with the push's token; the session comes back here when
-- it leaves (client_bound with `from`).
local M = {}

local BUCKET = "players"
local room_of = {}  -- player_id -> room name
local profiles = {} -- player_id -> {room =, x =, y =, moves =}, while online
local persist = true
-- player_id -> {ticket =, session_id =, gateway =}: the arena ticket a
-- session took. The VM is not told when a ticket ends (matched, expired):
-- an entry may name an ended ticket, whose cancel returns false.
local ticket_of = {}
local QUEUE = "arena"

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

-- play {} -> {ticket = "arena/<16 hex>"}: queue for an arena match. The
-- answer comes at once; the match comes later as a shield.match push
-- (65524) {"event":"matched","room":..,"token":..} or {"event":"expired"}
-- after the queue's ticket_ttl. Playing again queues anew: the ticket held
-- is cancelled first (it may have ended unseen). The props are the
-- server's, not the client's: the arena queue matches anyone.
function M.play(ctx, client, req)
  local pid = client.player_id
  local held = ticket_of[pid]
  if held then
    ticket_of[pid] = nil
    pcall(shield.match.cancel, held.ticket) -- false or an error: it is not waiting, or enqueue says so
  end
  local ticket = shield.match.enqueue(client, QUEUE, {})
  ticket_of[pid] = { ticket = ticket, session_id = client.session_id, gateway = client.gateway }
  return { ticket = ticket }
end

-- cancel_play {} -> {cancelled = true|false}: true if the ticket was still
-- waiting (it is then in no match); false if there was none, or it was
-- matched or expired already.
function M.cancel_play(ctx, client, req)
  local pid = client.player_id
  local held = ticket_of[pid]
  if not held then return { cancelled = false } end
  local cancelled = shield.match.cancel(held.ticket) -- raises: the entry stays, to cancel again
  if ticket_of[pid] == held then ticket_of[pid] = nil end
  return { cancelled = cancelled }
end

-- A bind to this VM: a login (from is nil), or the player back from the
-- arena (from = {room =, reason =}). Back home, the session has a new
-- epoch: the lobby room gets its new ref (pushes to the one it held no
-- longer reach it), and the ticket held, taken at the old epoch, is
-- cancelled (matched already, most likely; if the player played again
-- before joining, its push could not reach the session either).
function M.client_bound(ctx, client, from)
  if not from then return end
  local pid = client.player_id
  local room = room_of[pid]
  if room then shield.send("room", "join", room, shield.client.ref(client)) end
  local held = ticket_of[pid]
  if held then
    ticket_of[pid] = nil
    pcall(shield.match.cancel, held.ticket)
  end
end

function M.client_disconnected(ctx, client, reason)
  local pid = client.player_id
  local room = room_of[pid]
  if room then
    shield.send("room", "leave", room, pid, client.session_id, client.gateway)
    room_of[pid] = nil
  end
  profiles[pid] = nil -- stored already; loaded again at the next login
  -- Tickets do not follow sessions: a waiting one would match a player who
  -- is gone. Only this session's: a new login of the player may hold its own.
  local held = ticket_of[pid]
  if held and held.session_id == client.session_id and held.gateway == client.gateway then
    ticket_of[pid] = nil
    local ok, err = pcall(shield.match.cancel, held.ticket)
    if not ok then shield.log.warn("arena ticket not cancelled", "ticket", held.ticket, "error", tostring(err)) end
  end
end

return M
