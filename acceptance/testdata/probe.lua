-- probe: a service for acceptance tests of what the example game never does.
local M = {}

-- stale {user = "x"}: binds twice, then pushes to the first (stale) ref and
-- to the current one, and returns what each push said.
function M.stale(ctx, client, req)
  local ref1 = shield.client.bind(client, req.user, "probe")
  local ref2 = shield.client.bind(ref1, req.user, "probe")
  local ok1, code1 = shield.client_rpc.probe_push(ref1, { n = 1 })
  local ok2, code2 = shield.client_rpc.probe_push(ref2, { n = 2 })
  return { first = code1 or ok1, second = code2 or ok2, epoch = ref2.epoch }
end

-- echo returns its request unchanged.
function M.echo(ctx, client, req)
  return req
end

-- whoami returns the session's own id, as the gateway vouches for it.
function M.whoami(ctx, client, req)
  return { session_id = client.session_id, epoch = client.epoch, player_id = client.player_id }
end

-- forge pushes to a ClientRef built by hand from the request: the egress
-- checks must refuse every ref that is not a live session's current one.
function M.forge(ctx, client, req)
  local ok, code = shield.client_rpc.probe_push({
    session_id = req.session_id, epoch = req.epoch, player_id = req.player_id, gateway = req.gateway,
  }, { forged = true })
  return { result = code or ok }
end

-- leave {room =, player_id =, session_id =, gateway =}: sends the room the
-- leave a session's player VM sends when it ends, naming any session.
function M.leave(ctx, client, req)
  shield.send("room", "leave", req.room, req.player_id, req.session_id, req.gateway)
  return {}
end

return M
