-- player: one VM per shard (instances: 2); a player's session and calls
-- addressed {service = "player", key = player_id} reach the same VM.
local M = {}

local room_of = {} -- player_id -> room name

function M.init(ctx)
  shield.log.info("player shard ready")
end

-- join_room {room = "lobby"} -> {room = "lobby", members = 2}
function M.join_room(ctx, client, req)
  local room = type(req) == "table" and req.room
  if type(room) ~= "string" or room == "" then
    shield.error("player.bad_request", "room is required")
  end
  local old = room_of[client.player_id]
  if old and old ~= room then
    shield.send("room", "leave", old, client.player_id)
  end
  local members = shield.call("room", "join", room, shield.client.ref(client))
  room_of[client.player_id] = room
  return { room = room, members = members }
end

-- move {x = 1, y = 2} -> {}; everyone in the room gets a position push.
function M.move(ctx, client, req)
  local room = room_of[client.player_id]
  if not room then
    shield.error("player.not_in_room", "join a room first")
  end
  shield.send("room", "move", room, client.player_id, tonumber(req.x) or 0, tonumber(req.y) or 0)
  return {}
end

function M.client_disconnected(ctx, client, reason)
  local room = room_of[client.player_id]
  if room then
    shield.send("room", "leave", room, client.player_id)
    room_of[client.player_id] = nil
  end
end

return M
