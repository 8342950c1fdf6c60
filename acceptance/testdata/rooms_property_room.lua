-- The room kind "prop" of TestClientsTrackState (acceptance/
-- rooms_property_test.go) and clients/ts/test/room-property.test.ts
-- (docs/rooms.md §15): every tick makes 1 to 6 random changes to
-- room.state, seeded by params.seed (a Park-Miller generator of its own, so
-- that a seed gives the same run on every machine), and at the tick's end
-- pushes every member {v = tick, json = shield.json.encode(room.state)} on
-- the report route: the state the runtime walks and syncs for version
-- tick, as JSON. The clients compare the state they applied at each
-- version with it.
--
-- The changes cover docs/rooms.md §7.1's values: nested tables (maps),
-- arrays (plain sequences and shield.array, which sync as maps keyed
-- "1".."n"), strings (empty, multi-byte, NUL, escapes, up to 4096 bytes),
-- integers, floats beyond 2^53, -0, booleans; keys that JSON Pointers
-- escape ("~", "/"), that name Object.prototype properties, of 64 bytes;
-- paths 15 keys deep; sets, replaces (a table by a scalar and back),
-- removes, room.state itself replaced. A view's prefixes (the clients pick
-- them from the same keys) meet scalars on their way, tables that come
-- and go.
local M = {}

local seed = 1
local function rnd()
  seed = seed * 16807 % 2147483647
  return seed
end
-- r(n) is 1..n.
local function r(n) return rnd() % n + 1 end
-- chance(p): true with probability p per 1000.
local function chance(p) return rnd() % 1000 < p end

local keys = {
  "a", "b", "c", "x", "y", "hp", "name", "pub", "priv", "hand", "list",
  "~tilde", "sl/ash", "__proto__", "constructor", "toString", "hasOwnProperty",
  "ключ", "日本", "😀", "k e y", string.rep("k", 64), "v1", "v2",
}
local strs = {
  "", "x", "héllo", "日本語", "😀 emoji", "a\0b", "line\nbreak\t\"q\" \\ /", "\239\187\191bom",
  "<&>", "/~01", "__proto__", "null", "true", "12",
}
local specials = {
  2 ^ 53, -(2 ^ 53), 2 ^ 53 + 2, -(2 ^ 53 + 2), 1e300, -1e-300, 5e-324, 0.1, -0.0, 1.5,
  2 ^ 31, 4294967296.5, 1e21, 123456789012, -7, 0,
}

-- arrays: the tables made as arrays (weak keys): array changes keep them
-- arrays (integer keys only), and paths do not walk into them.
local arrays = setmetatable({}, { __mode = "k" })
local marked = setmetatable({}, { __mode = "k" }) -- made with shield.array: no holes

local function scalar()
  local k = r(20)
  if k == 1 then return true
  elseif k == 2 then return false
  elseif k <= 5 then return r(2001) - 1001
  elseif k <= 7 then return (r(2000001) - 1000001) / 64 -- some integral, most not
  elseif k <= 9 then return specials[r(#specials)]
  elseif k <= 15 then return strs[r(#strs)] .. (chance(500) and tostring(r(100)) or "")
  elseif k == 16 and chance(250) then
    -- a long string: up to 4096 bytes, split across frames of 8 KiB
    if chance(500) then return string.rep("é", r(2048)) end
    return string.rep(string.char(96 + r(26)), r(4096))
  end
  return r(100)
end

local newtable
local function newarray(depth)
  local t
  if chance(400) then
    t = shield.array()
    marked[t] = true
  else
    t = {}
  end
  arrays[t] = true
  for i = 1, r(5) - 1 do
    if depth > 1 and chance(150) then t[i] = newtable(depth - 1) else t[i] = scalar() end
  end
  return t
end

-- newtable(depth): a map of 0..3 entries, nested at most depth levels.
function newtable(depth)
  local t = {}
  for _ = 1, r(4) - 1 do
    local k = keys[r(#keys)]
    if depth > 1 and chance(250) then
      t[k] = newtable(depth - 1)
    elseif depth > 1 and chance(100) then
      t[k] = newarray(depth - 1)
    else
      t[k] = scalar()
    end
  end
  return t
end

local function value()
  local k = r(10)
  if k <= 6 then return scalar() end
  if k <= 8 then return newtable(3) end
  return newarray(2)
end

-- arrayChange: one change to an array t.
local function arrayChange(t)
  local n = #t
  local k = r(6)
  if k <= 2 or n == 0 then
    t[n + 1] = scalar()
  elseif k == 3 then
    table.remove(t, r(n))
  elseif k == 4 then
    t[r(n)] = scalar()
  elseif k == 5 then
    t[n] = nil
  elseif not marked[t] then
    t[r(n)] = nil -- a hole: an object with integer keys in JSON, a map either way
  else
    t[r(n)] = newtable(1)
  end
end

local function isMap(v) return type(v) == "table" and not arrays[v] end

-- count is the values below t (each table and scalar one).
local function count(t)
  local n = 0
  for _, v in pairs(t) do
    n = n + 1
    if type(v) == "table" then n = n + count(v) end
  end
  return n
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do
    if type(v) == "table" then
      local cv = copy(v)
      if arrays[v] then
        if marked[v] then
          local m = shield.array()
          for i, x in pairs(cv) do m[i] = x end
          cv = m
          marked[cv] = true
        end
        arrays[cv] = true
      end
      c[k] = cv
    else
      c[k] = v
    end
  end
  return c
end

-- change makes one random change to the state st.
local function change(ctx, st)
  local k = r(1000)
  if k <= 8 then
    -- room.state replaced by a copy of itself (new tables, a few changes)
    ctx.room.state = copy(st)
    return
  elseif k <= 10 then
    ctx.room.state = {}
    return
  elseif k <= 30 then
    -- a chain 15 keys deep from the root (paths are 1 to 16 keys)
    local t = {}
    st.deep = t
    for d = 2, 14 do
      local n = {}
      t[keys[r(#keys)]] = n
      t = n
    end
    t[keys[r(#keys)]] = scalar()
    return
  end
  -- walk to a random map and a key in it
  local parent = st
  for _ = 1, 4 do
    local key = keys[r(#keys)]
    local v = parent[key]
    if not isMap(v) or chance(350) then break end
    parent = v
  end
  local key = keys[r(#keys)]
  local v = parent[key]
  local what = r(100)
  if what <= 12 and type(v) == "table" and arrays[v] then
    arrayChange(v)
  elseif what <= 40 then
    parent[key] = scalar()
  elseif what <= 55 then
    parent[key] = value()
  elseif what <= 70 and isMap(v) then
    -- a table's entry changed, one level down
    if chance(300) then v[keys[r(#keys)]] = nil else v[keys[r(#keys)]] = scalar() end
  elseif what <= 85 then
    parent[key] = nil
  elseif what <= 92 then
    parent[key] = newarray(2)
  else
    parent[key] = v -- the same value: no change
  end
end

function M.room_init(ctx, params)
  seed = (params and tonumber(params.seed) or 1) % 2147483646 + 1
  ctx.room.state.clock = 0
end

function M.room_join(ctx, client, meta, seat)
  if type(meta) == "table" and type(meta.view) == "table" then
    ctx.room:view(client, meta.view)
  end
  return true
end

-- set_view {view = prefixes | null}: the caller's view from the next tick
-- (a SNAPSHOT of it).
function M.set_view(ctx, client, req)
  local v = req.view
  if v == shield.null then v = nil end
  return { ok = ctx.room:view(client, v) }
end

-- ballast {on = bool}: while on, the caller is pushed 8 pushes of 32 KB
-- on the heavy route each tick (the first refused one is logged), so that
-- a member that stops reading fills its socket's buffers at once; then
-- smaller ones fill its queue to the byte ("queue filled" logs that tick,
-- the last whose state frame could have been accepted). A
-- report the gateway refuses (queue_full: the member's queue is full) is
-- logged too.
local heavy, ballast, fillers = {}, nil, nil
function M.ballast(ctx, client, req)
  if req.on then heavy[client.player_id] = "on" else heavy[client.player_id] = nil end
  return {}
end

function M.room_tick(ctx, tick, inputs)
  local st = ctx.room.state
  if not chance(40) then st.clock = tick end
  for _ = 1, r(6) do
    change(ctx, st)
    st = ctx.room.state
  end
  -- keep it small: at most 300 values
  local n = count(st)
  while n > 300 do
    local victims = {}
    for k in pairs(st) do victims[#victims + 1] = k end
    table.sort(victims)
    local k = victims[r(#victims)]
    st[k] = nil
    n = count(st)
  end
  local refs = {}
  for _, m in ipairs(ctx.room:members()) do
    if not m.suspended then refs[#refs + 1] = m.ref end
  end
  if #refs > 0 then
    local _, rejected = shield.client_rpc.report(refs, { v = tick, json = shield.json.encode(st) })
    for i, code in pairs(rejected) do
      shield.log.info("report refused", "player_id", refs[i].player_id, "code", code, "tick", tick)
    end
  end
  for _, m in ipairs(ctx.room:members()) do
    if heavy[m.player_id] then
      ballast = ballast or { b = string.rep("z", 32000) }
      local refused = false
      for _ = 1, 8 do
        local ok, code = shield.client_rpc.heavy(m.ref, ballast)
        if not ok then
          if heavy[m.player_id] == "on" then
            shield.log.info("ballast refused", "player_id", m.player_id, "code", code, "tick", tick)
            heavy[m.player_id] = "refused"
          end
          refused = true
          break
        end
      end
      -- A full queue still takes a frame smaller than its room: fill what
      -- is left, so that this tick's state frame (sent after room_tick) is
      -- refused too and the member's base stops here.
      if refused then
        fillers = fillers or { { b = string.rep("z", 4096) }, { b = string.rep("z", 512) }, { b = string.rep("z", 64) }, { b = "z" } }
        for _, f in ipairs(fillers) do
          for _ = 1, 32 do
            if not shield.client_rpc.heavy(m.ref, f) then break end
          end
        end
        if heavy[m.player_id] == "refused" then
          shield.log.info("queue filled", "player_id", m.player_id, "tick", tick)
          heavy[m.player_id] = "filled"
        end
      end
    end
  end
end

return M
