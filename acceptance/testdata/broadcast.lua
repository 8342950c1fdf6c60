-- broadcast: every session that logs in is a member; blast pushes to all of
-- them at once, many times, and says which members refused what.
local M = {}

local members = {} -- ClientRefs, in login order

function M.login(ctx, client, req)
  members[#members + 1] = shield.client.bind(client, req.user, "broadcast")
  return { members = #members }
end

-- blast {count = 40, size = 4096} -> {accepted = n, rejected = {player = {code = n}}}
function M.blast(ctx, client, req)
  local body = { pad = string.rep("x", req.size or 0) }
  local accepted, rejected = 0, {}
  for _ = 1, req.count or 1 do
    local n, bad = shield.client_rpc.note(members, body)
    accepted = accepted + n
    for i, code in pairs(bad) do
      local p = members[i].player_id
      rejected[p] = rejected[p] or {}
      rejected[p][code] = (rejected[p][code] or 0) + 1
    end
  end
  return { accepted = accepted, rejected = rejected }
end

-- flood {member = 1, size = 32768, max = 10000}: pushes to one member until
-- its queue refuses one -> {sent = n, code = "client_rpc.queue_full"}
function M.flood(ctx, client, req)
  local body = { pad = string.rep("x", req.size or 0) }
  for n = 1, req.max or 10000 do
    local ok, code = shield.client_rpc.note(members[req.member], body)
    if not ok then return { sent = n - 1, code = code } end
    if n % 64 == 0 then shield.sleep(1) end -- let its writer try
  end
  return { sent = req.max }
end

return M
