-- The lobby of TestClientsTrackState (acceptance/rooms_property_test.go)
-- and clients/ts/test/room-property.test.ts: log in, make a room whose
-- mutations are seeded by req.seed.
local M = {}

function M.login(ctx, client, req)
  shield.client.bind(client, req.user, "lobby")
  return { ok = true }
end

function M.make(ctx, client, req)
  return { room = shield.room.create("prop", { seed = req.seed }) }
end

return M
