-- front: a client-facing service on a gateway node that calls calc on
-- another node, for the cluster tests of shield.call between nodes.
local M = {}

-- call {method = "add", arg = {a = 1, b = 2}} -> {ok = true, value = 3}
-- or {ok = false, code = ..., message = ...}
function M.call(ctx, client, req)
  local ok, v = pcall(shield.call, "calc", req.method, req.arg)
  if ok then return { ok = true, value = v } end
  if type(v) == "table" then return { ok = false, code = v.code, message = v.message } end
  return { ok = false, code = "lua", message = tostring(v) }
end

-- send {method = "note", arg = "x"} -> {sent = true} or {sent = false, code = ...}
function M.send(ctx, client, req)
  local ok, code = shield.send("calc", req.method, req.arg)
  return { sent = ok == true, code = code }
end

return M
