-- room: keeps each room's members and broadcasts their positions. It owns
-- the s2c route `position`, so shield.client_rpc.position exists here.
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

function M.leave(ctx, room, player_id)
  local members = rooms[room]
  if members then
    members[player_id] = nil
    if next(members) == nil then rooms[room] = nil end
  end
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
