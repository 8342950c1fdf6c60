-- The lobby of rooms_join_refused_test.go: log in, make a room, and reach a
-- room's methods (close it, let a held join go on) through the lobby.
local M = {}
function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "lobby")
  return { ok = true }
end
function M.make(ctx, client, req)
  return { room = shield.room.create("door", { name = req.name }) }
end
-- room {room = id, method = "shut" | "release"}: a method of that room.
function M.room(ctx, client, req)
  shield.call({ room = req.room }, req.method)
  return {}
end
function M.ping(ctx, client, req)
  return { home = true }
end
return M
