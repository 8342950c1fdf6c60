-- kv: one put and one get per request, for the kill -9 test
-- (kv_kill_test.go).
local M = {}

function M.put(ctx, client, req)
  return { rev = shield.kv.put("b", req.key, req.value) }
end

function M.get(ctx, client, req)
  local v, rev = shield.kv.get("b", req.key)
  return { value = v, rev = rev }
end

return M
