package statesync

import (
	"math"
	"math/rand/v2"
	"strings"
)

// gen makes random states, mutations and views for the property tests
// and the TypeScript vectors. It draws only from its own seeded source and
// walks maps in sorted order, so that a seed always makes the same trees.
type gen struct {
	r *rand.Rand
}

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, seed^0x5eed))} }

// genKeys are few, so that mutations hit existing paths, and awkward:
// JSON Pointer escapes, JavaScript's Object.prototype names, keys whose
// UTF-8 order differs from their UTF-16 order (U+FFFD before U+10000 in
// bytes, after it in UTF-16 code units), a BOM, NUL, the longest key.
var genKeys = []string{
	"a", "b", "c", "x", "y", "hp", "players", "alice", "bob",
	"A", "Z", "zz", "1", "10", "2", "a/b", "~", "~1", "é", "\u00ff",
	"\uFFFD", "\U00010000", "🎮", "\uFEFF", "\x00", "__proto__", "constructor", "toString",
	strings.Repeat("k", MaxKeyBytes),
}

var genStrings = []string{"", "a", "hello", "é", "🎮 go", "\uFEFFbom", "line\nbreak", "\x00nul", "\"quoted\"", "\u2028", strings.Repeat("s", 200)}

func (g *gen) key() string { return genKeys[g.r.IntN(len(genKeys))] }

func (g *gen) scalar() any {
	switch g.r.IntN(12) {
	case 0:
		return false
	case 1:
		return true
	case 2:
		return int64(g.r.IntN(256))
	case 3:
		return int64(g.r.IntN(1<<20)) - 1<<19
	case 4:
		return []int64{MaxSafe, -MaxSafe, MaxSafe - 1, -MaxSafe + 1, 0, -1, 63, 64, -64, -65, 8191, 8192}[g.r.IntN(12)]
	case 5:
		return float64(g.r.IntN(2000)-1000) + 0.5
	case 6:
		return g.r.Float64()*2e6 - 1e6
	case 7:
		return []float64{MaxSafe + 2, -MaxSafe - 2, 1e300, -1e300, 0x1p60, 5e-324, 0.1, math.MaxFloat64, 1e21, 123456789.125}[g.r.IntN(10)]
	case 8, 9:
		return genStrings[g.r.IntN(len(genStrings))]
	default:
		return int64(g.r.IntN(100))
	}
}

// tree is a random table whose paths start at depth (its own path's
// length): a few entries, tables more rarely the deeper they are, none
// whose entries would be more than MaxDepth keys down.
func (g *gen) tree(depth int) map[string]any {
	m := map[string]any{}
	n := g.r.IntN(5)
	if depth == 0 {
		n += 2
	}
	for i := 0; i < n; i++ {
		k := g.key()
		if depth+1 < MaxDepth && g.r.IntN(3+2*depth) < 2 {
			m[k] = g.tree(depth + 1)
		} else {
			m[k] = g.scalar()
		}
	}
	if depth == 0 && g.r.IntN(10) == 0 {
		m["deep"] = g.chain(1)
	}
	return m
}

// chain is a table nested to the deepest a state holds, from depth.
func (g *gen) chain(depth int) map[string]any {
	m := map[string]any{"v": g.scalar()}
	if depth+1 < MaxDepth {
		m[g.key()] = g.chain(depth + 1)
	}
	return m
}

// mutate makes a few random changes to tree in place: down a random
// path, a set of a scalar or a new subtree, or a remove.
func (g *gen) mutate(tree map[string]any) {
	for n := 1 + g.r.IntN(5); n > 0; n-- {
		m, depth := tree, 0
		for {
			k := g.key()
			if keys := sortedKeys(m); len(keys) > 0 && g.r.IntN(3) > 0 {
				k = keys[g.r.IntN(len(keys))]
			}
			if sub, ok := m[k].(map[string]any); ok && depth+2 <= MaxDepth && g.r.IntN(3) > 0 {
				m, depth = sub, depth+1
				continue
			}
			switch g.r.IntN(5) {
			case 0:
				delete(m, k)
			case 1:
				if depth+1 < MaxDepth {
					m[k] = g.tree(depth + 1)
				} else {
					m[k] = g.scalar()
				}
			case 2:
				if depth+1 < MaxDepth {
					m[k] = map[string]any{} // an empty table, also replacing a scalar
				}
			default:
				m[k] = g.scalar()
			}
			break
		}
	}
}

// paths is every path of the trees, sorted, each once.
func paths(trees ...map[string]any) []Path {
	seen := map[string]Path{}
	var walk func(m map[string]any, p Path)
	walk = func(m map[string]any, p Path) {
		for k, v := range m {
			q := append(append(Path{}, p...), k)
			seen[pathKey(q)] = q
			if sub, ok := v.(map[string]any); ok {
				walk(sub, q)
			}
		}
	}
	for _, t := range trees {
		walk(t, nil)
	}
	out := make([]Path, 0, len(seen))
	for _, q := range seen {
		out = append(out, q)
	}
	sortPaths(out)
	return out
}

func sortPaths(ps []Path) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && Compare(ps[j], ps[j-1]) < 0; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// view is a random view over the trees' paths: All, or 0 to 4 prefixes,
// each an existing path or a path cut short or made up.
func (g *gen) view(trees ...map[string]any) View {
	if g.r.IntN(4) == 0 {
		return All
	}
	ps := paths(trees...)
	var prefixes []Path
	for n := g.r.IntN(5); n > 0; n-- {
		var q Path
		if len(ps) > 0 && g.r.IntN(4) > 0 {
			q = append(Path{}, ps[g.r.IntN(len(ps))]...)
			if len(q) > 1 && g.r.IntN(3) == 0 {
				q = q[:1+g.r.IntN(len(q)-1)]
			}
		} else {
			q = Path{g.key(), g.key()}[:1+g.r.IntN(2)]
		}
		prefixes = append(prefixes, q)
	}
	v, err := NewView(prefixes...)
	if err != nil {
		panic(err)
	}
	return v
}

// history is a random run of versions: states[0] and n mutated after it,
// and the change set of each.
func (g *gen) history(n int) (states []map[string]any, sets []Changes) {
	states = []map[string]any{g.tree(0)}
	for v := 1; v <= n; v++ {
		next := Clone(states[v-1])
		g.mutate(next)
		cs, err := Diff(states[v-1], next)
		if err != nil {
			panic(err)
		}
		states = append(states, next)
		sets = append(sets, cs)
	}
	return states, sets
}

// limitFor is a frame limit near small that every op of ops fits, so
// that small limits split versions into many parts.
func limitFor(ops []Op, small int, roomID string) int {
	h := headerSize(SnapshotFrame, MaxSafe, MaxSafe, roomID) + 1
	limit := max(small, h)
	for i := range ops {
		if need := h + opSize(nil, &ops[i]); need > limit {
			limit = need
		}
	}
	return limit
}
