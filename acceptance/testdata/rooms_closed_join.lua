-- The script of rooms_closed_join_test.go, run by two actors: "home", the
-- entry service (log in, make a room, ping; spin, which a room asks for),
-- and "shut", a room kind whose room_join accepts and closes the room in
-- the same run, once home is held in spin. Home hears the join's reply only
-- after spin returned, which it does once the room is unregistered
-- (shield.send to it is room_not_found): the join's bind always reaches a
-- room that is gone (docs/rooms.md §4.4 step 3 after the close).
local M = {}

-- home

-- The last client_bound's from of each player, for ping.
local from_of = {}

function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "home")
  return { ok = true }
end

function M.make(ctx, client, req)
  return { room = shield.room.create("shut", {}) }
end

function M.ping(ctx, client, req)
  local from = from_of[client.player_id] or {}
  return { home = true, room = from.room, reason = from.reason }
end

-- Home's alone: a room module may not define client_bound.
if shield.self() == "home" then
  function M.client_bound(ctx, client, from)
    if from then
      from_of[client.player_id] = { room = from.room, reason = from.reason }
      shield.log.info("home again", "player_id", client.player_id, "room", from.room, "reason", from.reason)
    end
  end
end

-- spin holds home's one VM, never suspending, until the room is gone: the
-- join's reply waits on home's control lane meanwhile. Its first send arms
-- the room; the others (one a millisecond, not to flood the room's lane)
-- only ask whether the room is still registered.
function M.spin(ctx, room)
  local deadline = shield.now() + 5000
  local ok, code = shield.send({ room = room }, "arm")
  local next = shield.now() + 1
  while code ~= "client_rpc.room_not_found" do
    local now = shield.now()
    if now > deadline then
      error("spin: room " .. room .. " still registered after 5 s (last send: " .. tostring(code) .. ")")
    end
    if now >= next then
      ok, code = shield.send({ room = room }, "arm")
      next = now + 1
    end
  end
  shield.log.info("spin saw the room gone", "room", room)
end

-- shut

local armed = false

function M.room_init(ctx, params)
  ctx.room.state.open = true
end

-- room_join asks home to spin and waits (its seat held) until spin armed
-- it, so that home is busy before the join's reply leaves; then it closes
-- the room and accepts, in the same run.
function M.room_join(ctx, client, meta)
  local ok, code = shield.send("home", "spin", ctx.room.id)
  if not ok then
    return false, "shut.no_home", tostring(code)
  end
  local deadline = shield.now() + 5000
  while not armed do
    if shield.now() > deadline then
      return false, "shut.never_armed", "home never spun"
    end
    shield.sleep(1)
  end
  ctx.room:close("closed while the join binds")
  shield.log.info("shut accepts and closes", "player_id", client.player_id, "room", ctx.room.id)
  return true
end

function M.arm(ctx)
  armed = true
end

function M.room_close(ctx, reason)
  shield.log.info("shut closed", "room", ctx.room.id, "reason", reason)
end

return M
