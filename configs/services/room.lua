-- room: keeps each room's members and broadcasts their positions. It owns
-- the s2c routes `position` and `left`, so shield.client_rpc.position and
-- shield.client_rpc.left exist here.
local M = {}

local rooms = {} -- room name -> {player_id -> ClientRef}

-- join(room, ref) -> the number of members
function M.join(ctx, room, ref)
  local members = rooms[room] or {}
  rooms[room] = members
  members[ref.player_id] = ref
  local n = 0
  for _ in pairs(members) do n = n + 1 end
  return n
end

-- leave(room, player_id, session_id, gateway): that session of the player
-- left the room (joined another, or disconnected); the members still there
-- get a `left` push with the new count, so that their boards drop the
-- player. A player who logged in again elsewhere may have joined with the
-- new session before the old one's leave arrives (they come from different
-- VMs, in no order): the member goes only while it is still that session.
function M.leave(ctx, room, player_id, session_id, gateway)
  local members = rooms[room]
  local ref = members and members[player_id]
  if not ref or (session_id and (ref.session_id ~= session_id or ref.gateway ~= gateway)) then return end
  members[player_id] = nil
  local refs = {}
  for _, r in pairs(members) do refs[#refs + 1] = r end
  if #refs == 0 then
    rooms[room] = nil
    return
  end
  shield.client_rpc.left(refs, { player_id = player_id, members = #refs })
end

function M.move(ctx, room, player_id, x, y)
  local members = rooms[room]
  if not members then return end
  local refs = {}
  for _, ref in pairs(members) do refs[#refs + 1] = ref end
  -- One encode, many recipients; a member that left is simply rejected.
  shield.client_rpc.position(refs, { player_id = player_id, x = x, y = y })
end

return M
