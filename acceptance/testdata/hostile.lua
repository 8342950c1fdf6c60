-- hostile: the service behind the hostile-client tests (issue 19). Each
-- function is something a red team made a script do on a client's say-so:
-- answer big, push big, raise, push to a ref the client names, hold memory,
-- and hand client numbers to table.insert and unpack.
local M = {}

local hoard = {} -- what hoard requests keep: strings of 1 MiB each
local hoarded = 0

-- login {user}: binds the session to this service as that player.
function M.login(ctx, client, req)
  local ref = shield.client.bind(client, req.user, ctx.service)
  return { player_id = ref.player_id, session_id = ref.session_id, epoch = ref.epoch }
end

-- whoami returns what the gateway vouches for about the caller.
function M.whoami(ctx, client, req)
  return { session_id = client.session_id, epoch = client.epoch, player_id = client.player_id }
end

-- echo returns its request unchanged.
function M.echo(ctx, client, req)
  return req
end

-- big {size}: an answer whose body holds size bytes of padding.
function M.big(ctx, client, req)
  return { pad = string.rep("x", req.size) }
end

-- pushbig {size, count}: pushes a blob of size bytes to the caller count
-- times without waiting, and returns how many were taken and the codes of
-- the refusals.
function M.pushbig(ctx, client, req)
  local body = { pad = string.rep("y", req.size) }
  local sent, refused = 0, {}
  for _ = 1, req.count do
    local ok, code = shield.client_rpc.blob(client, body)
    if ok then
      sent = sent + 1
    else
      refused[code] = (refused[code] or 0) + 1
    end
  end
  return { sent = sent, refused = refused }
end

-- raise: a handler that fails, as a client can make one fail on purpose.
function M.raise(ctx, client, req)
  error("raised on request")
end

-- forge {session_id, epoch, player_id, gateway}: pushes to the ref the
-- client names, as a careless script might.
function M.forge(ctx, client, req)
  local ok, code = shield.client_rpc.note({
    session_id = req.session_id, epoch = req.epoch, player_id = req.player_id, gateway = req.gateway,
  }, { forged = true })
  return { result = code or ok }
end

-- hoard {mb}: keeps mb more strings of 1 MiB in the VM's state, and
-- returns how many it holds. Memory that stays, grown by nobody.
function M.hoard(ctx, client, req)
  for _ = 1, req.mb do
    hoarded = hoarded + 1
    hoard[hoarded] = string.rep(string.char(65 + hoarded % 26), 1048575) .. hoarded
  end
  return { mb = hoarded }
end

-- churn {kb}: what an ordinary handler does: builds kb KiB of garbage in
-- 1 KiB strings and drops it.
function M.churn(ctx, client, req)
  local t = {}
  for i = 1, req.kb do
    t[i] = string.rep("z", 1023) .. i
  end
  return { n = #t }
end

-- tinsert {pos}: table.insert at a position the client chooses.
function M.tinsert(ctx, client, req)
  local t = {}
  table.insert(t, req.pos, true)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return { entries = n }
end

-- unpack {n}: unpack(t, 1, n) with a count the client chooses.
function M.unpack(ctx, client, req)
  local t = { 1, 2, 3 }
  return { count = select("#", unpack(t, 1, req.n)) }
end

return M
