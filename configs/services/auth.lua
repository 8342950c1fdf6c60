-- auth: the entry service. A new session talks to it until login binds the
-- session to the player service.
--
-- login {token = "alice.1767225600.3f1c..."} -> {player_id = "alice"}
--
-- A token is "<player_id>.<expires, unix seconds>.<mac>", the mac being
-- the lowercase hex HMAC-SHA256 of "<player_id>.<expires>" under the
-- actor's settings.token_secret: whoever holds the secret (your account
-- service, or `gateway token` for local play) can mint one, and the
-- gateway needs no call out to check it. With settings.dev_login, a
-- client may also send {user = "alice"} and be logged in as anyone: for
-- local play and the browser demo only.
local M = {}

local secret, dev_login

function M.init(ctx)
  local s = shield.settings()
  secret = type(s.token_secret) == "string" and s.token_secret or nil
  dev_login = s.dev_login == true
  if not secret and not dev_login then
    error("auth needs settings.token_secret (or settings.dev_login: true for local play)")
  end
  if dev_login then
    shield.log.warn("dev_login is on: any client may log in as anyone with {\"user\": ...}")
  end
end

-- verify returns the player_id of a valid, unexpired token, or raises.
local function verify(token)
  local pid, expires, mac = token:match("^([%w_-]+)%.(%d+)%.(%x+)$")
  if not pid or #pid > 64 or not secret then
    shield.error("auth.bad_token", "the token is not valid")
  end
  local want = shield.crypto.hmac_sha256(secret, pid .. "." .. expires)
  if not shield.crypto.equal(mac, want) then
    shield.error("auth.bad_token", "the token is not valid")
  end
  if tonumber(expires) * 1000 < shield.now() then
    shield.error("auth.token_expired", "the token has expired")
  end
  return pid
end

function M.login(ctx, client, req)
  if type(req) ~= "table" then req = {} end
  local pid
  if type(req.token) == "string" then
    pid = verify(req.token)
  elseif dev_login then
    if type(req.user) ~= "string" or req.user == "" then
      shield.error("auth.bad_request", "user is required")
    end
    pid = req.user
  else
    shield.error("auth.bad_request", "token is required")
  end
  -- Binding moves the session to the player VM that owns this player_id;
  -- the answer still comes from here.
  shield.client.bind(client, pid, "player")
  return { player_id = pid }
end

return M
