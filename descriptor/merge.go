package descriptor

import (
	"fmt"
	"strings"

	"github.com/shieldrpc/shield/config"
)

// Merge builds the global table from every actor's rpc.routes (layer 2).
// It reports every conflict it finds, not only the first: an id or a name
// declared by two actors (`rpc route conflict: id N` / `name X`, naming both
// actors), an owner_service that is no actor, an id above 16 bits when a
// listener speaks typelen, and two push helpers of one service with the same
// binding; in a config with rooms, a route that takes an id or name
// reserved for Shield's room routes, which the merge then adds (RoomRoutes),
// or an actor named "shield", their owner.
// Routes that failed layer 1 (no valid id) are left out, so Merge
// can run on a config that has layer-1 errors and still report its own.
// The table is returned even with errors, holding the first declaration of
// each conflicting id.
func Merge(cfg *config.Config) (*Table, config.Errors) {
	var errs config.Errors
	fail := func(actor string, r *config.Route, format string, args ...any) {
		errs = append(errs, &config.Error{File: cfg.File, Line: r.Line, Actor: actor, Route: r.Label(), Msg: fmt.Sprintf(format, args...)})
	}

	actors := make(map[string]bool, len(cfg.Actors))
	for _, a := range cfg.Actors {
		actors[a.Name] = true
	}
	typelen := typelenListener(cfg)

	type seen struct {
		actor string
		line  int
	}
	ids := map[int64]seen{}
	names := map[string]seen{}
	helpers := map[[2]string]*config.Route{} // {owner, binding} -> first push route
	var routes []Route
	rooms := cfg.HasRooms()
	for ai := range cfg.Actors {
		a := &cfg.Actors[ai]
		if rooms && a.Name == ShieldOwner {
			// Its routes would be owned and declared by "shield", which is
			// how the table tells the reserved routes (IsRoomRoute).
			errs = append(errs, &config.Error{File: cfg.File, Line: a.Line, Actor: a.Name,
				Msg: fmt.Sprintf("actor name %q is reserved for Shield's room routes in a config with rooms", ShieldOwner)})
		}
		for ri := range a.Routes {
			r := &a.Routes[ri]
			if r.ID <= 0 || r.ID > config.MaxRouteID {
				continue // layer 1 already reported it
			}
			ok := true
			if rooms && r.ID >= RoomRouteFirst && r.ID <= RoomRouteLast {
				fail(a.Name, r, "id %d is reserved for Shield's room routes (%d..%d) in a config with rooms", r.ID, RoomRouteFirst, RoomRouteLast)
				ok = false
			}
			if rooms && strings.HasPrefix(r.Name, reservedPrefix) {
				fail(a.Name, r, "name %q: route names starting with %q are reserved in a config with rooms", r.Name, reservedPrefix)
				ok = false
			}
			if first, dup := ids[r.ID]; dup {
				// Two routes of one actor with one id are a layer-1 error.
				if first.actor != a.Name {
					fail(a.Name, r, "rpc route conflict: id %d is declared by actor %q (line %d) and actor %q (line %d)",
						r.ID, first.actor, first.line, a.Name, r.Line)
				}
				ok = false
			} else {
				ids[r.ID] = seen{a.Name, r.Line}
			}
			if r.Name != "" {
				if first, dup := names[r.Name]; dup {
					if first.actor != a.Name {
						fail(a.Name, r, "rpc route conflict: name %s is declared by actor %q (line %d) and actor %q (line %d)",
							r.Name, first.actor, first.line, a.Name, r.Line)
					}
					ok = false
				} else {
					names[r.Name] = seen{a.Name, r.Line}
				}
			}
			if !actors[r.OwnerService] {
				fail(a.Name, r, "owner_service %q is not an actor", r.OwnerService)
				ok = false
			}
			if typelen != "" && r.ID > config.MaxTypelenRouteID {
				fail(a.Name, r, "id %d does not fit the 16-bit route_id of envelope typelen (listener %q); use ids up to %d",
					r.ID, typelen, config.MaxTypelenRouteID)
			}
			// A route already rejected registers no helper: its own error
			// says why, and a second one about the helper would be noise.
			if ok && r.Direction.ToClient() && r.Binding != "" {
				key := [2]string{r.OwnerService, r.Binding}
				if first, dup := helpers[key]; dup {
					fail(a.Name, r, "push helper conflict: shield.client_rpc.%s of service %q is also %s (line %d)",
						r.Binding, r.OwnerService, first.Label(), first.Line)
					ok = false
				} else {
					helpers[key] = r
				}
			}
			if ok {
				routes = append(routes, fromConfig(cfg, a, r))
			}
		}
	}
	if rooms {
		routes = append(routes, roomRoutes(cfg)...)
	}
	return newTable(routes), errs
}

func fromConfig(cfg *config.Config, a *config.Actor, r *config.Route) Route {
	return Route{
		ID:            uint32(r.ID),
		Name:          r.Name,
		Binding:       r.Binding,
		Direction:     r.Direction,
		Owner:         r.OwnerService,
		Declarer:      a.Name,
		RequiresAuth:  r.RequiresAuth,
		Action:        r.Action,
		RequestCodec:  r.RequestCodec,
		RequestSchema: r.RequestSchema,
		LazyDecode:    r.LazyDecode,
		RoomInput:     r.RoomInput,
		File:          cfg.File,
		Line:          r.Line,
	}
}

// typelenListener returns the name of the first listener that speaks
// typelen, or "" when none does.
func typelenListener(cfg *config.Config) string {
	for _, l := range cfg.Network.Listeners {
		if l.Protocol.Envelope == "typelen" {
			return l.Name
		}
	}
	return ""
}
