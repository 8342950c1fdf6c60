// Package descriptor merges every actor's declared routes into one global
// route table (validation layer 2 of SPEC §2) and projects from it the small,
// read-only view the gateway checks each frame against.
//
// The table is built once at start and never changes, so it is shared by
// every goroutine without locks.
package descriptor

import (
	"fmt"
	"sort"

	"github.com/shieldrpc/shield/config"
)

// Route is one entry of the merged table.
type Route struct {
	ID            uint32
	Name          string // may be empty
	Binding       string // c2s/bidi: the module function; s2c/bidi: the helper name
	Direction     config.Direction
	Owner         string // the service whose VMs compile the route
	Declarer      string // the actor whose rpc.routes declares it
	RequiresAuth  bool
	Action        config.Action
	RequestCodec  string
	RequestSchema string
	// LazyDecode lets a VM skip decoding a request its handler cannot
	// read (luavm: a handler with no req parameter), where nothing else
	// would observe the decode. Not part of the cluster's table hash: no
	// frame's fate depends on it.
	LazyDecode bool
	// RoomInput marks a route whose frames are a room's tick inputs and
	// have no handler (docs/rooms.md §2.2).
	RoomInput bool
	File      string // where it was declared, for messages
	Line      int
}

// Label names the route in logs and messages: its id, and its name when it
// has one.
func (r *Route) Label() string { return config.RouteLabel(int64(r.ID), r.Name) }

// MetricName is the route's label value in metrics: its name, or its id when
// it has none (SPEC §9).
func (r *Route) MetricName() string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprint(r.ID)
}

// Table is the merged, immutable route table.
type Table struct {
	routes []Route // sorted by id
	byID   map[uint32]int
	byName map[string]int
}

// Routes returns every route sorted by id. The slice is shared: do not
// modify it.
func (t *Table) Routes() []Route { return t.routes }

// Len is the number of routes.
func (t *Table) Len() int { return len(t.routes) }

// Route returns the route with the given id.
func (t *Table) Route(id uint32) (*Route, bool) {
	i, ok := t.byID[id]
	if !ok {
		return nil, false
	}
	return &t.routes[i], true
}

// ByName returns the route with the given name.
func (t *Table) ByName(name string) (*Route, bool) {
	i, ok := t.byName[name]
	if !ok {
		return nil, false
	}
	return &t.routes[i], true
}

// Owned returns the routes whose owner is service, sorted by id: exactly
// what that service's VMs compile.
func (t *Table) Owned(service string) []Route {
	var out []Route
	for _, r := range t.routes {
		if r.Owner == service {
			out = append(out, r)
		}
	}
	return out
}

func newTable(routes []Route) *Table {
	sort.Slice(routes, func(i, j int) bool { return routes[i].ID < routes[j].ID })
	t := &Table{routes: routes, byID: make(map[uint32]int, len(routes)), byName: make(map[string]int)}
	for i, r := range routes {
		t.byID[r.ID] = i
		if r.Name != "" {
			t.byName[r.Name] = i
		}
	}
	return t
}
