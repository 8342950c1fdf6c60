-- echo: answers every request with its body, for client benchmarks
-- (bench/run.sh): the gateway's round trip and nothing else.
local M = {}

function M.echo(ctx, client, req)
  return req
end

return M
