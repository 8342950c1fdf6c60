package client

import (
	"errors"
	"fmt"
	"sort"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// Routes maps route names to route ids and back: the descriptor's table as
// a client sees it. idlen and typelen headers carry only ids (SPEC §3), so
// a client that wants to speak in names resolves them here. A generated
// stub package (`gateway gen -lang go`) has one as its Routes; RoutesFrom
// reads one from a gateway's config. A Routes is immutable and safe for
// concurrent use.
type Routes struct {
	byName map[string]uint32
	byID   map[uint32]string
}

// NewRoutes makes a Routes from names to ids. Two names for one id, an
// empty name, or id 0 are errors.
func NewRoutes(ids map[string]uint32) (*Routes, error) {
	r := &Routes{byName: make(map[string]uint32, len(ids)), byID: make(map[uint32]string, len(ids))}
	names := make([]string, 0, len(ids))
	for n := range ids {
		names = append(names, n)
	}
	sort.Strings(names) // the same error for the same map
	for _, n := range names {
		id := ids[n]
		switch {
		case n == "":
			return nil, errors.New("client: a route without a name")
		case id == 0 || id > 1<<24-1:
			return nil, fmt.Errorf("client: route %q: id %d out of range 1..16777215", n, id)
		}
		if other, dup := r.byID[id]; dup {
			return nil, fmt.Errorf("client: routes %q and %q have the same id %d", other, n, id)
		}
		r.byName[n], r.byID[id] = id, n
	}
	return r, nil
}

// MustRoutes is NewRoutes for tables known to be right (generated stubs);
// it panics on an error.
func MustRoutes(ids map[string]uint32) *Routes {
	r, err := NewRoutes(ids)
	if err != nil {
		panic(err)
	}
	return r
}

// RoutesFrom reads the route table of a gateway's configuration file:
// config.Load, then descriptor.Merge (SPEC §2 layers 1 and 2; no script is
// run). Unnamed routes, and Shield's room routes (the SDK's constants), are
// left out, as `gateway gen` leaves them out.
func RoutesFrom(configFile string) (*Routes, error) {
	cfg, err := config.Load(configFile)
	if err != nil {
		return nil, err
	}
	table, errs := descriptor.Merge(cfg)
	if len(errs) > 0 {
		return nil, errs
	}
	ids := map[string]uint32{}
	for _, rt := range table.Routes() {
		// Shield's own room routes are the SDK's constants (RouteRoomJoin,
		// ...), left out as `gateway gen` leaves them out of the stubs.
		if rt.Name != "" && !rt.IsRoomRoute() {
			ids[rt.Name] = rt.ID
		}
	}
	return NewRoutes(ids)
}

// ID returns the id of the route named name.
func (r *Routes) ID(name string) (uint32, bool) {
	if r == nil {
		return 0, false
	}
	id, ok := r.byName[name]
	return id, ok
}

// Name returns the name of route id, "" when it has none here.
func (r *Routes) Name(id uint32) string {
	if r == nil {
		return ""
	}
	return r.byID[id]
}

// Len is the number of routes.
func (r *Routes) Len() int {
	if r == nil {
		return 0
	}
	return len(r.byName)
}

// UnknownRouteError is a route name the client's Routes do not have.
type UnknownRouteError struct{ Name string }

func (e *UnknownRouteError) Error() string {
	return fmt.Sprintf("client: unknown route %q (not in Options.Routes)", e.Name)
}
