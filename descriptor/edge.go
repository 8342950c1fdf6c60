package descriptor

import "github.com/shieldrpc/shield/config"

// EdgeRoute is what the gateway needs to know about a route to validate a
// frame at the edge (SPEC §5): never a binding, a codec or a schema.
type EdgeRoute struct {
	ID           uint32
	Name         string
	Direction    config.Direction
	RequiresAuth bool
	Action       config.Action
	Owner        string
	// Binary marks the route whose pushes are bytes whatever the body
	// codec: shield.room.state (docs/rooms.md §8.1), base64 on the legacy
	// envelopes.
	Binary bool
}

// Edge is the gateway's read-only projection of the table. Lookups return
// pointers into it and never allocate, because they run once per frame.
type Edge struct {
	byID   map[uint32]*EdgeRoute
	byName map[string]*EdgeRoute
}

// Edge builds the gateway's projection of t.
func (t *Table) Edge() *Edge {
	e := &Edge{byID: make(map[uint32]*EdgeRoute, len(t.routes)), byName: make(map[string]*EdgeRoute)}
	entries := make([]EdgeRoute, len(t.routes))
	for i, r := range t.routes {
		entries[i] = EdgeRoute{ID: r.ID, Name: r.Name, Direction: r.Direction, RequiresAuth: r.RequiresAuth, Action: r.Action, Owner: r.Owner,
			Binary: r.IsRoomRoute() && r.ID == RouteRoomState}
		e.byID[r.ID] = &entries[i]
		if r.Name != "" {
			e.byName[r.Name] = &entries[i]
		}
	}
	return e
}

// Lookup returns the route with the given id, or nil. The result is shared
// and must not be modified.
func (e *Edge) Lookup(id uint32) *EdgeRoute { return e.byID[id] }

// LookupName returns the route with the given name, or nil: the legacy
// envelopes may name a route instead of giving its id.
func (e *Edge) LookupName(name string) *EdgeRoute { return e.byName[name] }
