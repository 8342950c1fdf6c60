package descriptor

import "github.com/shieldrpc/shield/config"

// The ids Shield reserves for its room routes (docs/rooms.md §2.4, §8.1)
// in a config with rooms or queues: they fit typelen's 16 bits, and
// reserving them only then keeps every config without rooms valid.
const (
	RoomRouteFirst = 65520
	RoomRouteLast  = 65535

	RouteRoomState = 65520 // shield.room.state: s2c push of a state frame
	RouteRoomSync  = 65521 // shield.room.sync: c2s notify {"version":N}
	RouteRoomJoin  = 65522 // shield.room.join: c2s request
	RouteRoomLeave = 65523 // shield.room.leave: c2s request
	RouteMatch     = 65524 // shield.match: s2c push of a matchmaking event

	// ShieldOwner is the Owner of the reserved routes: no actor's VM
	// compiles them, so gateway check shows them as Shield's.
	ShieldOwner = "shield"
)

// reservedPrefix starts the names of the reserved routes; in a config with
// rooms no user route may take a name starting with it.
const reservedPrefix = "shield."

// IsRoomRoute reports whether r is one of the routes the merge adds for
// rooms, which `gateway gen` leaves out and no VM binds.
func (r *Route) IsRoomRoute() bool { return r.Owner == ShieldOwner && r.Declarer == ShieldOwner }

// roomRoutes are the system routes of docs/rooms.md §8.1. Each needs a
// login, and their bodies are JSON (state frames binary) whatever the
// listener's body codec, so no request codec or schema applies. They have
// no binding: the gateway and the room runtime serve them.
func roomRoutes(cfg *config.Config) []Route {
	r := func(id uint32, name string, dir config.Direction) Route {
		return Route{ID: id, Name: name, Direction: dir, Owner: ShieldOwner, Declarer: ShieldOwner,
			RequiresAuth: true, Action: config.DecodeLocal, File: cfg.File}
	}
	return []Route{
		r(RouteRoomState, "shield.room.state", config.S2C),
		r(RouteRoomSync, "shield.room.sync", config.C2S),
		r(RouteRoomJoin, "shield.room.join", config.C2S),
		r(RouteRoomLeave, "shield.room.leave", config.C2S),
		r(RouteMatch, "shield.match", config.S2C),
	}
}
