package statesync

import (
	"fmt"
	"slices"
)

// OpKind is an op's code on the wire.
type OpKind uint8

// The ops of section 8.2.
const (
	// Set puts a scalar, or a new empty table, at the path.
	Set OpKind = 1
	// Remove removes the path and everything under it.
	Remove OpKind = 2
)

// String is the op's name as frames' docs write it.
func (k OpKind) String() string {
	switch k {
	case Set:
		return "SET"
	case Remove:
		return "REMOVE"
	}
	return fmt.Sprintf("op %d", uint8(k))
}

// Op is one change of a frame: a SET of Value at Path, or a REMOVE of
// Path (Value unused).
type Op struct {
	Kind  OpKind
	Path  Path
	Value Value
}

// String prints the op for test failures and messages.
func (o Op) String() string {
	if o.Kind == Set {
		return fmt.Sprintf("SET %s %#v", o.Path.Pointer(), o.Value)
	}
	return fmt.Sprintf("%s %s", o.Kind, o.Path.Pointer())
}

// Prior is what a change's path held in the state the change applies to.
// A frame does not carry it; Compose needs it to tell a REMOVE of a path
// the base had from one of a path an earlier version created, and
// View.Filter to tell whether a member saw a table that became a scalar.
type Prior uint8

// The priors.
const (
	// Absent: the path was not in the state (also every path under a
	// table set new in the same change set).
	Absent Prior = iota
	// Scalar: it held a boolean, number or string.
	Scalar
	// Tabled: it held a table.
	Tabled
)

// Change is an op of a version's change set, with what its path held
// before the change set.
type Change struct {
	Op
	Prior Prior
}

// Changes is a change set: the changes from one state to another, in path
// order, each path at most once, applicable with Apply (section 7.2).
type Changes []Change

// Ops is the change set's ops, for Apply or a frame of the whole view.
func (cs Changes) Ops() []Op {
	ops := make([]Op, len(cs))
	for i := range cs {
		ops[i] = cs[i].Op
	}
	return ops
}

// priorOf is what a tree's value is, as a Prior.
func priorOf(x any) Prior {
	if _, ok := x.(map[string]any); ok {
		return Tabled
	}
	return Scalar
}

// Diff is the change set that takes the state old to the state new: per
// key in path order, a REMOVE of what new lacks, a SET of what is new or
// different (a table that replaces a scalar is a SET of a new table and
// SETs of its entries), nothing for what is equal, and the same between
// two tables one level down. It is the least set of ops that does it, and
// the one a room's runtime sends (the worked example of section 8.2 is
// one). Both trees must hold only what Check allows; a value that is not
// is an error.
func Diff(old, new map[string]any) (Changes, error) {
	d := differ{}
	if err := d.tables(make(Path, 0, MaxDepth), old, new); err != nil {
		return nil, err
	}
	return d.out, nil
}

// Snapshot is the change set that builds tree from {}: every value a SET
// (Prior Absent), a table before its entries. Its Ops are a SNAPSHOT's.
func Snapshot(tree map[string]any) (Changes, error) {
	d := differ{}
	for _, k := range sortedKeys(tree) {
		if err := d.set(Path{k}, tree[k], Absent); err != nil {
			return nil, err
		}
	}
	return d.out, nil
}

type differ struct {
	out Changes
}

// tables diffs two tables at path. path is scratch: every change gets its
// own copy.
func (d *differ) tables(path Path, old, new map[string]any) error {
	keys := d.union(old, new)
	for _, k := range keys {
		p := append(path, k)
		ov, inOld := old[k]
		nv, inNew := new[k]
		switch {
		case !inNew:
			d.out = append(d.out, Change{Op: Op{Kind: Remove, Path: slices.Clip(slices.Clone(p))}, Prior: priorOf(ov)})
		case !inOld:
			if err := d.set(p, nv, Absent); err != nil {
				return err
			}
		default:
			om, oldTable := ov.(map[string]any)
			nm, newTable := nv.(map[string]any)
			if oldTable && newTable {
				if err := d.tables(p, om, nm); err != nil {
					return err
				}
				continue
			}
			if !oldTable && !newTable {
				a, err1 := ValueOf(ov)
				b, err2 := ValueOf(nv)
				if err2 != nil {
					return fmt.Errorf("room state: %s: %v", p.Pointer(), err2)
				}
				if err1 == nil && a == b {
					continue
				}
			}
			if err := d.set(p, nv, priorOf(ov)); err != nil {
				return err
			}
		}
	}
	return nil
}

// union is the keys of old and new in path order, each once: a slice of
// its own, since tables recurses while it walks it.
func (d *differ) union(old, new map[string]any) []string {
	keys := make([]string, 0, len(old)+len(new))
	for k := range new {
		keys = append(keys, k)
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// set appends the SET of x at path and, for a table, its entries.
func (d *differ) set(path Path, x any, prior Prior) error {
	v, err := ValueOf(x)
	if err != nil {
		return fmt.Errorf("room state: %s: %v", path.Pointer(), err)
	}
	d.out = append(d.out, Change{Op: Op{Kind: Set, Path: slices.Clip(slices.Clone(path)), Value: v}, Prior: prior})
	if m, ok := x.(map[string]any); ok {
		for _, k := range sortedKeys(m) {
			if err := d.set(append(path, k), m[k], Absent); err != nil {
				return err
			}
		}
	}
	return nil
}
