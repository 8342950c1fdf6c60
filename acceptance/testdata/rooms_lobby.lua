-- The lobby of every rooms_*_test.go (the harness is rooms_harness_test.go) and of the TS room tests: log in, make a room
-- (of req.kind, default arena, with req.params, default {name = req.name}), ask a room's method
-- through its {room = id} address, join a room from a handler (enter), hold the VM busy for req.ms
-- (hold), answer that the session is home (ping), queue for a match and cancel (play, quit_play),
-- and log members coming home.
local M = {}

function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "lobby")
  return { ok = true }
end

function M.make(ctx, client, req)
  return { room = shield.room.create(req.kind or "arena", req.params or { name = req.name }) }
end

function M.ask(ctx, client, req)
  return shield.call({ room = req.room }, req.method, req.arg) or {}
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

function M.ping(ctx, client, req)
  return { home = true }
end

function M.play(ctx, client, req)
  return { ticket = shield.match.enqueue(client, req.queue, req.props or {}, req.query) }
end

function M.quit_play(ctx, client, req)
  return { cancelled = shield.match.cancel(req.ticket) }
end

function M.client_bound(ctx, client, from)
  if from then
    shield.log.info("home again", "player_id", client.player_id, "room", from.room, "reason", from.reason)
  end
end

return M
