package statesync

import (
	"fmt"
	"slices"
	"strings"
)

// MaxPrefixes is the most prefixes a view has (section 7.4).
const MaxPrefixes = 16

// View is what one member sees of a room's state (section 7.4): the paths
// under any of its prefixes, and the tables on the way to them (with only
// their visible entries); a scalar on the way is hidden. The zero View is
// everything.
type View struct {
	limited  bool
	prefixes []Path // sorted, each once
}

// All is the default view: everything.
var All = View{}

// NewView is the view of the given prefixes, each 1 to 16 keys; none at
// all is a view of nothing but the root. Its messages are the argument
// errors room:view raises after its own name ("prefix 2: ...").
func NewView(prefixes ...Path) (View, error) {
	if len(prefixes) > MaxPrefixes {
		return View{}, fmt.Errorf("more than %d prefixes", MaxPrefixes)
	}
	ps := make([]Path, 0, len(prefixes))
	for i, p := range prefixes {
		if len(p) == 0 || len(p) > MaxDepth {
			return View{}, fmt.Errorf("prefix %d: a path is a string key or an array of 1 to %d keys", i+1, MaxDepth)
		}
		ps = append(ps, slices.Clone(p))
	}
	slices.SortFunc(ps, Compare)
	ps = slices.CompactFunc(ps, func(a, b Path) bool { return Compare(a, b) == 0 })
	return View{limited: true, prefixes: ps}, nil
}

// IsAll reports whether the view is everything.
func (v View) IsAll() bool { return !v.limited }

// Prefixes is the view's prefixes, sorted and each once (nil for All).
func (v View) Prefixes() []Path { return v.prefixes }

// Key identifies the view: members whose views have the same prefix set
// (compared sorted) have the same Key and share encodings. All's is "".
func (v View) Key() string {
	if !v.limited {
		return ""
	}
	var b strings.Builder
	b.WriteByte('=')
	for _, p := range v.prefixes {
		// Length-prefixed keys: no key can forge a boundary.
		fmt.Fprintf(&b, "%d:", len(p))
		for _, k := range p {
			fmt.Fprintf(&b, "%d:%s", len(k), k)
		}
	}
	return b.String()
}

// visibility is where a path stands in a view.
type visibility uint8

const (
	hidden   visibility = iota
	ancestor            // a proper ancestor of a prefix: seen if it holds a table
	under               // at or under a prefix: seen as it is
)

func (v View) classify(p Path) visibility {
	if !v.limited {
		return under
	}
	vis := hidden
	for _, pre := range v.prefixes {
		if hasPrefix(p, pre) {
			return under
		}
		if len(p) < len(pre) && hasPrefix(pre, p) {
			vis = ancestor
		}
	}
	return vis
}

// Tree is the part of tree the view sees, a new tree (shared with nothing
// of tree).
func (v View) Tree(tree map[string]any) map[string]any {
	if !v.limited {
		return Clone(tree)
	}
	return v.table(tree, make(Path, 0, MaxDepth))
}

func (v View) table(m map[string]any, path Path) map[string]any {
	out := map[string]any{}
	for k, x := range m {
		p := append(path, k)
		switch v.classify(p) {
		case under:
			out[k] = cloneAny(x)
		case ancestor:
			if sub, ok := x.(map[string]any); ok {
				out[k] = v.table(sub, p)
			}
		}
	}
	return out
}

// Filter is the ops of the change set cs that a member with this view
// sees: applied to View.Tree of the state cs applies to, they give
// View.Tree of the state after it. An op at or under a prefix is seen as
// it is, one on neither side of a prefix not at all. On the way to a
// prefix only tables are seen: a SET of a new table is kept; a SET of a
// scalar, or a REMOVE, is a REMOVE where the member saw a table (Prior)
// and nothing where it saw none. Filter of a Snapshot is the view's
// snapshot.
func (v View) Filter(cs Changes) []Op {
	ops := make([]Op, 0, len(cs))
	for _, c := range cs {
		switch v.classify(c.Path) {
		case under:
			ops = append(ops, c.Op)
		case ancestor:
			if c.Kind == Set && c.Value.kind == KindTable {
				ops = append(ops, c.Op)
			} else if c.Prior == Tabled {
				ops = append(ops, Op{Kind: Remove, Path: c.Path})
			}
		}
	}
	return ops
}
