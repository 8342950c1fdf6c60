-- limits: the service behind the edge and limits acceptance tests. What a
-- test must observe inside the VM (a notify ran, a session left, the VM
-- stopped) it logs through shield.log, which the tests capture.
local M = {}

local marks = {} -- what mark notifies recorded, in order
local room = {}  -- player_id -> ClientRef of each member

function M.stop(ctx)
  shield.log.info("stop", "instance", ctx.instance)
end

function M.client_disconnected(ctx, client, reason)
  shield.log.info("client_disconnected", "session_id", client.session_id,
    "player_id", client.player_id or "", "epoch", client.epoch, "reason", reason)
  local p = client.player_id
  if p and room[p] and room[p].session_id == client.session_id then
    room[p] = nil
  end
end

-- login {user}: binds the session to this service as that player.
function M.login(ctx, client, req)
  local ref = shield.client.bind(client, req.user, ctx.service)
  return { player_id = ref.player_id, session_id = ref.session_id, epoch = ref.epoch, gateway = ref.gateway }
end

-- echo returns its request unchanged.
function M.echo(ctx, client, req)
  return req
end

-- whoami returns what the gateway vouches for about the caller.
function M.whoami(ctx, client, req)
  return { session_id = client.session_id, epoch = client.epoch, player_id = client.player_id,
    gateway = client.gateway, route = client.route, route_id = client.route_id, request_id = client.request_id }
end

-- mark (sent as a notify) records its request.
function M.mark(ctx, client, req)
  marks[#marks + 1] = req
  shield.log.info("mark", "v", req)
end

-- marks returns what mark recorded.
function M.marks(ctx, client, req)
  return { marks = shield.array(marks) }
end

-- sleep {ms, push}: waits (the VM serves others meanwhile), then answers;
-- with push it first pushes a note to the caller's own session, and logs
-- what the push said.
function M.sleep(ctx, client, req)
  shield.log.info("sleeping", "session_id", client.session_id)
  shield.sleep(req.ms)
  if req.push then
    local _, code = shield.client_rpc.note(client, { late = true })
    shield.log.info("late_push", "session_id", client.session_id, "code", code or "ok")
  end
  return { slept = req.ms }
end

-- spin {ms} keeps the VM busy, without yielding, for ms.
function M.spin(ctx, client, req)
  shield.log.info("spinning", "ms", req.ms)
  local stop = shield.now() + req.ms
  while shield.now() < stop do end
  return { spun = req.ms }
end

-- join puts the caller in the room.
function M.join(ctx, client, req)
  room[client.player_id] = shield.client.ref(client)
  local n = 0
  for _ in pairs(room) do n = n + 1 end
  return { members = n }
end

-- broadcast {text} pushes a note to every member at once, and returns how
-- many took it and, by player, the codes of those that did not.
function M.broadcast(ctx, client, req)
  local refs, players = {}, {}
  for p, ref in pairs(room) do
    refs[#refs + 1] = ref
    players[#players + 1] = p
  end
  local accepted, rejected = shield.client_rpc.note(refs, { text = req.text })
  local codes = {}
  for i, code in pairs(rejected) do codes[players[i]] = code end
  return { accepted = accepted, rejected = codes }
end

-- push {ref, size, count, pause, stop} pushes a body of size bytes to ref
-- (any ref the client sends: forged, stale or real) count times, sleeping
-- pause ms between pushes, until a refusal with the code stop (any
-- refusal when stop is absent). It returns how many were taken, the
-- refusals by code, and the last code.
function M.push(ctx, client, req)
  local body = { pad = string.rep("x", req.size or 0) }
  local sent, seen, last = 0, {}, "ok"
  for _ = 1, (req.count or 1) do
    local ok, code = shield.client_rpc.big(req.ref, body)
    if ok then
      sent = sent + 1
    else
      seen[code] = (seen[code] or 0) + 1
      last = code
      if code == (req.stop or code) then break end
    end
    if req.pause then shield.sleep(req.pause) end
  end
  return { sent = sent, codes = seen, last = last }
end

return M
