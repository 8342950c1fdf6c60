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

-- trace {key = "k", a = 1, b = 2, method = "add"} -> {sum = 3}: a kv
-- write and a shield.call to calc (on another node), for the tracing
-- tests; method "fail" makes the call, and so the request, fail.
function M.trace(ctx, client, req)
  shield.kv.put("players", "trace-" .. req.key, { a = req.a })
  local sum = shield.call("calc", req.method or "add", { a = req.a, b = req.b })
  shield.log.info("traced", "key", req.key)
  return { sum = sum }
end


-- kvget {key = "k"} -> the value front_trace stored under "trace-" .. key,
-- or shield.null.
function M.kvget(ctx, client, req)
  local v = shield.kv.get("players", "trace-" .. req.key)
  if v == nil then return shield.null end
  return v
end

return M
