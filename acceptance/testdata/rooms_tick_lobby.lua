-- The lobby of rooms_tick_test.go, rooms_input_test.go and rooms_errors_test.go: log in, make a
-- room of any kind, ask a room's method through its {room = id} address, join a room from a
-- handler (enter), and hold the VM busy for req.ms (hold).
local M = {}

function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "lobby")
  return { ok = true }
end

function M.make(ctx, client, req)
  return { room = shield.room.create(req.kind, req.params) }
end

function M.ask(ctx, client, req)
  return shield.call({ room = req.room }, req.method, req.arg)
end

function M.enter(ctx, client, req)
  shield.room.join(client, req.room, { meta = req.meta })
  return {}
end

function M.hold(ctx, client, req)
  local stop = shield.now() + req.ms
  while shield.now() < stop do end
  return {}
end

return M
