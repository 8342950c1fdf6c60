-- wire: the service behind the gateway's wire tests. It answers, fails on
-- purpose, and reports every disconnect through shield.log, which the tests
-- capture.
local M = {}

-- echo returns its request unchanged.
function M.echo(ctx, client, req)
  return req
end

-- fail raises a business error: the client gets an error frame.
function M.fail(ctx, client, req)
  shield.error("wire.refused", "refused on purpose")
end

function M.client_disconnected(ctx, client, reason)
  shield.log.info("client_disconnected", "session_id", client.session_id, "reason", reason)
end

return M
