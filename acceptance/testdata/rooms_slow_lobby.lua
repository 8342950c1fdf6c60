-- The lobby of rooms_slow_test.go: log in, make a room.
local M = {}
function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "lobby")
  return { ok = true }
end
function M.make(ctx, client, req)
  return { room = shield.room.create("flood", {}) }
end
return M
