package statesync

import (
	"fmt"
	"slices"
)

// Compose is one change set covering several consecutive ones: applied to
// the state the first applies to, it gives the state the last one gave
// (section 7.2's rule that a delta from version b to v, applied at b, is
// the state at v). Each path keeps its last op, and the Prior of its first
// (what the base held); what a later op replaces is dropped, and a REMOVE
// of a path an earlier set created (Prior Absent) cancels out. A room's
// runtime composes the sets of versions b+1..v for a member whose base is
// b; the result may have more ops than Diff of the two states would (a
// table replaced and then built back the same is a SET and its entries),
// never a wrong one.
//
// Each set must be a change set of the state the previous one left (as
// Diff makes them): an op under a path an earlier set made a scalar or
// removed is an error.
func Compose(sets ...Changes) (Changes, error) {
	switch len(sets) {
	case 0:
		return nil, nil
	case 1:
		return sets[0], nil
	}
	root := &cnode{}
	for _, cs := range sets {
		next := &cnode{}
		for _, c := range cs {
			next.insert(c)
		}
		if err := root.merge(next, false, nil); err != nil {
			return nil, err
		}
	}
	var out Changes
	root.flatten(make(Path, 0, MaxDepth), &out)
	return out, nil
}

// cnode is one path of a change set held as a tree: its op, if it has one,
// and the paths under it that have changes.
type cnode struct {
	op    OpKind // 0: no op here, only changes under it
	val   Value
	prior Prior
	kids  map[string]*cnode
}

// insert puts c at its path, making op-less nodes on the way.
func (n *cnode) insert(c Change) {
	for _, k := range c.Path {
		n = n.kid(k)
	}
	n.op, n.val, n.prior = c.Kind, c.Value, c.Prior
}

func (n *cnode) kid(k string) *cnode {
	if n.kids == nil {
		n.kids = map[string]*cnode{}
	}
	c := n.kids[k]
	if c == nil {
		c = &cnode{}
		n.kids[k] = c
	}
	return c
}

// newTable reports whether n's op is a SET of a new table.
func (n *cnode) newTable() bool { return n.op == Set && n.val.kind == KindTable }

// merge applies the later change set's node t (at the same path as n) on
// top of n. fresh says that n lies under a table set new by the composed
// set so far, where nothing of the base remains: a path there was absent
// in the base. path is for messages.
func (n *cnode) merge(t *cnode, fresh bool, path Path) error {
	if n.op != 0 && !n.newTable() && len(t.kids) > 0 {
		return fmt.Errorf("statesync: compose: a change under %s, which an earlier change set made a scalar or removed", path.Pointer())
	}
	under := fresh || n.newTable()
	for k, tk := range t.kids {
		p := append(path, k)
		nk := n.kids[k]
		if tk.op == 0 {
			// Changes further down only: keep n's op here, go on.
			if nk == nil {
				if under {
					// Under a new table only what the composed sets made
					// exists, and they made no table here.
					return fmt.Errorf("statesync: compose: a change under %s, which is not in the state", p.Pointer())
				}
				nk = n.kid(k)
			}
			if err := nk.merge(tk, under, p); err != nil {
				return err
			}
			if nk.op == 0 && len(nk.kids) == 0 {
				delete(n.kids, k)
			}
			continue
		}
		// The later op replaces the path and all under it. What the base
		// held there is the first op's Prior: the earlier set's if it had
		// an op here, nothing under a new table, else the later set's (the
		// earlier set changed only paths below, so the path itself was as
		// in the base).
		prior := tk.prior
		switch {
		case under:
			prior = Absent
		case nk != nil && nk.op != 0:
			prior = nk.prior
		}
		if tk.op == Remove && prior == Absent {
			delete(n.kids, k) // created since the base and removed again
			continue
		}
		c := tk.clone()
		c.prior = prior
		if n.kids == nil {
			n.kids = map[string]*cnode{}
		}
		n.kids[k] = c
	}
	return nil
}

// clone is a deep copy, so that composing never aliases an input set's
// tree (each Compose builds its own, but a copy keeps merge obviously
// safe).
func (n *cnode) clone() *cnode {
	c := &cnode{op: n.op, val: n.val, prior: n.prior}
	if len(n.kids) > 0 {
		c.kids = make(map[string]*cnode, len(n.kids))
		for k, v := range n.kids {
			c.kids[k] = v.clone()
		}
	}
	return c
}

// flatten appends the tree's changes in path order.
func (n *cnode) flatten(path Path, out *Changes) {
	keys := make([]string, 0, len(n.kids))
	for k := range n.kids {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := n.kids[k]
		p := append(path, k)
		if c.op != 0 {
			*out = append(*out, Change{Op: Op{Kind: c.op, Path: slices.Clip(slices.Clone(p)), Value: c.val}, Prior: c.prior})
		}
		c.flatten(p, out)
	}
}
