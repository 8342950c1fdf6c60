package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The rooms bench's game (docs/rooms.md §14): a lobby that logs sessions
// in and makes rooms, a room kind whose state has Fields fields of which
// Changing change at every tick, and the baseline, the same game written
// as today: a service whose rooms are shield.timeout loops with their own
// member lists, pushing the changed fields as JSON.
const (
	RoomsLogin     = 1    // body: the player id, a JSON string
	RoomsMake      = 2    // body {"fields","changing","hz","baseline"}: answers the room's id
	RoomsTJoin     = 3    // the baseline's join: body {"room": id}
	RoomsTInput    = 4    // the baseline's input (a notify): body {"room": id, "x": n}
	RoomsInput     = 3001 // the room kind's input route (room_input)
	RoomsTState    = 4001 // the baseline's push: {"t": tick, "f": {changed fields}}
	RouteRoomsJoin = 65522
)

const roomsLobbyLua = `local M = {}
function M.login(ctx, client, req) shield.client.bind(client, req, "lobby") end
function M.make(ctx, client, req)
  if req.baseline then
    local id = "t" .. client.player_id
    shield.call({ service = "timer", key = id }, "make", id, req.fields, req.changing, req.hz)
    return id
  end
  return shield.room.create("bench_room", { fields = req.fields, changing = req.changing })
end
function M.tjoin(ctx, client, req)
  shield.call({ service = "timer", key = req.room }, "join", req.room, shield.client.ref(client))
  return {}
end
function M.tinput(ctx, client, req)
  shield.send({ service = "timer", key = req.room }, "input", req.room, client.player_id, req.x)
end
return M
`

// The room kind: Fields fields, Changing of them set at each tick (a
// different few each time), and the inputs counted, not kept: only the
// fields are synced.
const roomsRoomLua = `local M = {}
local fields, changing, handled = 20, 3, 0
function M.room_init(ctx, p)
  fields, changing = p.fields, p.changing
  local f = {}
  for i = 1, fields do f["f" .. i] = 0 end
  ctx.room.state.f = f
end
function M.room_tick(ctx, tick, inputs)
  handled = handled + #inputs
  local f = ctx.room.state.f
  for i = 1, changing do
    f["f" .. ((tick * changing + i) % fields + 1)] = tick
  end
end
return M
`

// The baseline: each room a table of this instance's, ticking by
// shield.timeout on its own grid, pushing the fields it changed to its
// members' refs.
const roomsTimerLua = `local M = {}
local rooms = {}
local function tick(r)
  r.tick = r.tick + 1
  local changed = {}
  for i = 1, r.changing do
    local k = "f" .. ((r.tick * r.changing + i) % r.fields + 1)
    r.f[k] = r.tick
    changed[k] = r.tick
  end
  r.handled = r.handled + #r.inputs
  r.inputs = {}
  if #r.members > 0 then
    shield.client_rpc.tstate(r.members, { t = r.tick, f = changed })
  end
  -- the next tick on the grid, never in a burst after a late one
  r.due = r.due + r.period
  local now = shield.now()
  while r.due <= now do r.due = r.due + r.period end
  shield.timeout(r.due - now, function() tick(r) end)
end
function M.make(ctx, id, fields, changing, hz)
  local r = { f = {}, fields = fields, changing = changing, tick = 0, members = {}, inputs = {}, handled = 0,
    period = 1000 / hz, due = shield.now() }
  for i = 1, fields do r.f["f" .. i] = 0 end
  rooms[id] = r
  tick(r)
end
function M.join(ctx, id, ref)
  local r = rooms[id]
  r.members[#r.members + 1] = ref
end
function M.input(ctx, id, pid, x)
  local r = rooms[id]
  if r then r.inputs[#r.inputs + 1] = x end
end
return M
`

// RoomsConfig is the rooms bench's config: its listener and admin
// addresses ("127.0.0.1:0" when empty), the tick rate, and for a cluster
// the node's name, its node.services and the NATS it joins (Embedded: it
// runs the embedded server at that address).
type RoomsConfig struct {
	Listen, Admin string
	Hz            int
	Node          string // "" : bench-rooms, one process
	Services      string // node.services, e.g. "[lobby]"; "" : every actor
	NATS          string // cluster.nats; with Embedded, cluster.embedded
	Embedded      bool
	ServiceNode   bool // no listener: a cluster's service node
}

// Write writes the config and its scripts into dir and returns its path.
func (c RoomsConfig) Write(dir string) (string, error) {
	for name, src := range map[string]string{"lobby.lua": roomsLobbyLua, "room.lua": roomsRoomLua, "timer.lua": roomsTimerLua} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return "", err
		}
	}
	or := func(s, d string) string {
		if s == "" {
			return d
		}
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "node: {name: %s", or(c.Node, "bench-rooms"))
	if c.Services != "" {
		fmt.Fprintf(&b, ", services: %s", c.Services)
	}
	b.WriteString("}\n")
	switch {
	case c.Embedded:
		fmt.Fprintf(&b, "cluster: {embedded: %q}\n", c.NATS)
	case c.NATS != "":
		fmt.Fprintf(&b, "cluster: {nats: %q}\n", c.NATS)
	}
	b.WriteString("network:\n")
	if !c.ServiceNode {
		fmt.Fprintf(&b, "  listeners:\n    - {name: rooms, address: %q, entry_service: lobby}\n", or(c.Listen, "127.0.0.1:0"))
	}
	fmt.Fprintf(&b, `  admin: {address: %q}
log: {level: warn}
session:
  max_inflight: 256
  outbound_queue: 1024
  max_sessions: 100000
  idle_timeout: 600s
  rate_limit: {per_second: 0}
actors:
  - name: lobby
    script: lobby.lua
    instances: 4
    mailbox: 65536
    rpc:
      routes:
        - {id: 1, name: login, binding: login, requires_auth: false}
        - {id: 2, name: make, binding: make}
        - {id: 3, name: tjoin, binding: tjoin}
        - {id: 4, name: tinput, binding: tinput}
  - name: bench_room
    script: room.lua
    mailbox: 65536
    # tick_budget at its limit (the default is 500ms at 20 Hz): an
    # overloaded machine shows as lateness and skipped ticks, never as
    # rooms closed for a tick descheduled past its budget.
    room: {tick_hz: %d, max_members: 64, max_rooms: 100000, idle_close: 0s, tick_budget: 1s}
    rpc:
      routes:
        - {id: 3001, name: input, room_input: true}
  - name: timer
    script: timer.lua
    instances: 8
    mailbox: 65536
    max_pending: 100000
    rpc:
      routes:
        - {id: 4001, name: tstate, binding: tstate, direction: s2c}
`, or(c.Admin, "127.0.0.1:0"), max(c.Hz, 1))
	path := filepath.Join(dir, "rooms.yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
