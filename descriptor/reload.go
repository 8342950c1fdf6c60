package descriptor

import "fmt"

// Same reports whether r and o are the same route, wherever each was
// declared: a reload that only moves a route's line changes nothing.
func (r *Route) Same(o *Route) bool {
	a, b := *r, *o
	a.File, a.Line, b.File, b.Line = "", 0, "", 0
	return a == b
}

// SameRoutes reports whether a and b hold the same routes in the same
// order (Owned and Routes are sorted by id).
func SameRoutes(a, b []Route) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Same(&b[i]) {
			return false
		}
	}
	return true
}

// Same reports whether t and o route the same way (see Route.Same).
func (t *Table) Same(o *Table) bool { return SameRoutes(t.routes, o.routes) }

// Keep is the table a reload ends with when some actors kept their old
// VMs (SPEC §12): next's routes, except that the services in kept own
// what they owned in old and nothing else. It fails when a route of a
// kept service and one of next's collide on an id or a name; the caller
// then keeps old whole.
func Keep(next, old *Table, kept []string) (*Table, error) {
	keep := make(map[string]bool, len(kept))
	for _, s := range kept {
		keep[s] = true
	}
	var routes []Route
	for _, r := range next.routes {
		if !keep[r.Owner] {
			routes = append(routes, r)
		}
	}
	for _, r := range old.routes {
		if keep[r.Owner] {
			routes = append(routes, r)
		}
	}
	t := newTable(routes)
	if len(t.byID) != len(routes) {
		return nil, fmt.Errorf("descriptor: a route id of %v is taken by a reloaded service", kept)
	}
	named := 0
	for _, r := range routes {
		if r.Name != "" {
			named++
		}
	}
	if len(t.byName) != named {
		return nil, fmt.Errorf("descriptor: a route name of %v is taken by a reloaded service", kept)
	}
	return t, nil
}
