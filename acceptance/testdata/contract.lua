-- contract: the services behind the contract tests (SPEC §3-§9 rules of
-- the second round). Both actors run this script; what a test must see
-- inside a VM (a hook ran, a frame ran or did not) is logged with
-- shield.log, which the tests capture. Every hook logs its name.
local M = {}

local function hook(ctx, name, client, extra)
  shield.log.info(name, "svc", ctx.service, "epoch", client.epoch, "extra", extra or "")
end

function M.client_bound(ctx, client) hook(ctx, "client_bound", client) end
function M.client_suspended(ctx, client) hook(ctx, "client_suspended", client) end
function M.client_resumed(ctx, client) hook(ctx, "client_resumed", client) end
function M.client_disconnected(ctx, client, reason) hook(ctx, "client_disconnected", client, reason) end
function M.draining(ctx) shield.log.info("draining hook", "svc", ctx.service) end

-- login {user, to}: binds the session to service `to` (default hall) as
-- user; the answer comes from here, after the bind.
function M.login(ctx, client, req)
  local ref = shield.client.bind(client, req.user, req.to or "hall")
  return { player_id = ref.player_id, session_id = ref.session_id, epoch = ref.epoch, gateway = ref.gateway }
end

-- whoami: what the gateway vouches for.
function M.whoami(ctx, client, req)
  return { service = ctx.service, session_id = client.session_id, epoch = client.epoch,
    player_id = client.player_id or shield.null, request_id = client.request_id }
end

-- mark (a notify, or a request): logs that it ran.
function M.mark(ctx, client, req)
  shield.log.info("mark", "v", tostring(req and req.v))
  return { marked = req and req.v }
end

-- spin {ms, then_user}: keeps the VM busy without yielding; with then_user
-- it then rebinds the session to that player on this service.
function M.spin(ctx, client, req)
  shield.log.info("spinning", "ms", req.ms)
  local stop = shield.now() + req.ms
  while shield.now() < stop do end
  if req.then_user then
    shield.client.bind(client, req.then_user, ctx.service)
  end
  return { spun = req.ms }
end

-- sleep {ms}: suspends (the VM serves others).
function M.sleep(ctx, client, req)
  shield.sleep(req.ms)
  return { slept = req.ms }
end

-- big {n}: a response body of n bytes (a JSON string of n-2 characters).
function M.big(ctx, client, req)
  return string.rep("x", req.n - 2)
end

-- pushme {n, count, ref}: pushes count notes of n bytes to ref (default:
-- the caller), and returns what each push said.
function M.pushme(ctx, client, req)
  local target = req.ref or client
  local out = {}
  for i = 1, (req.count or 1) do
    local ok, code = shield.client_rpc.note(target, { i = i, pad = string.rep("y", req.n or 0) })
    out[i] = ok and "ok" or code
  end
  return out
end

-- kick {ref, reason}
function M.kick(ctx, client, req)
  local ok, code = shield.client.kick(req.ref or client, req.reason or "bye")
  return { ok = ok == true, code = code or shield.null }
end

return M
