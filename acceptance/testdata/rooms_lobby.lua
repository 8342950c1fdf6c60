-- The lobby of rooms_join_test.go: log in, make a room, see members come home.
local M = {}
function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "lobby")
  return { ok = true }
end
function M.make(ctx, client, req)
  return { room = shield.room.create("arena", { name = req.name }) }
end
function M.client_bound(ctx, client, from)
  if from then
    shield.log.info("home again", "player_id", client.player_id, "room", from.room, "reason", from.reason)
  end
end
return M
