-- drain: logs every disconnect and its own stop, so a test reading the
-- process's logs can check that a drain ran all of them.
local M = {}

function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "drain")
  return { player_id = req.user }
end

function M.slow(ctx, client, req)
  shield.log.info("slow started", "ms", req.ms)
  shield.sleep(req.ms or 100)
  return { slept = req.ms }
end

function M.client_disconnected(ctx, client, reason)
  shield.log.info("client_disconnected", "player_id", client.player_id, "reason", reason)
end

function M.stop(ctx)
  shield.log.info("stop ran")
end

return M
