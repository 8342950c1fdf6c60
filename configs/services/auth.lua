-- auth: the entry service. A new session talks to it until login binds the
-- session to the player service.
local M = {}

-- login {user = "alice"} -> {player_id = "alice"}
function M.login(ctx, client, req)
  if type(req) ~= "table" or type(req.user) ~= "string" or req.user == "" then
    shield.error("auth.bad_request", "user is required")
  end
  -- A real game checks a token here. Binding moves the session to the
  -- player VM that owns this player_id; the answer still comes from here.
  shield.client.bind(client, req.user, "player")
  return { player_id = req.user }
end

return M
