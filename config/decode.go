package config

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks a yaml.v3 node tree by hand instead of unmarshalling into
// structs: that is what lets every error carry its line, actor and route,
// and lets one pass collect every error instead of stopping at the first.
type decoder struct {
	file string
	errs Errors

	// work counts the keys and items visited, budget bounds it. Aliases
	// let a small file describe a huge tree (a "billion laughs"); past the
	// budget the walk stops with one error instead of running out of time
	// or memory. Without aliases every node is visited once, so the budget
	// (proportional to the file's size) is never reached by a real file.
	work, budget int
	halted       bool

	// servicesBad records that node.services had an entry (or a value)
	// already reported, so that validation does not add "hosts nothing"
	// about a list that only lost its bad entries.
	servicesBad bool
}

// where is the actor and route a node belongs to, for messages. The
// route's label is built only when a message needs it: a config may hold
// tens of thousands of routes and no error.
type where struct {
	actor     string
	isRoute   bool
	routeID   int64
	routeName string
}

// routeWhere is where a route of actor is.
func routeWhere(actor string, id int64, name string) where {
	return where{actor: actor, isRoute: true, routeID: id, routeName: name}
}

func (d *decoder) errorf(line int, w where, format string, args ...any) {
	e := &Error{File: d.file, Line: line, Actor: w.actor, Msg: fmt.Sprintf(format, args...)}
	if w.isRoute {
		e.Route = RouteLabel(w.routeID, w.routeName)
	}
	d.errs = append(d.errs, e)
}

// spend counts one unit of work and reports whether the walk may go on.
func (d *decoder) spend(line int) bool {
	if d.halted {
		return false
	}
	d.work++
	if d.budget > 0 && d.work > d.budget {
		d.halted = true
		d.errorf(line, where{}, "the file expands to more than %d values through aliases; decoding stopped", d.budget)
		return false
	}
	return true
}

// fields maps a mapping's known keys to the functions that decode their
// values. A key missing from it is an error.
type fields map[string]func(v *yaml.Node)

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or an explicit null: both mean "use the
// default".
func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// isMerge reports whether k is YAML's merge key, `<<` unquoted.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge"
}

// pair is one key and its value, with aliases resolved.
type pair struct{ k, v *yaml.Node }

// pairs flattens mapping n: its own keys in order, then the keys merged in
// with `<<: *base` (or `<<: [*a, *b]`) that it does not set itself, the
// earlier of several merged mappings winning, as the YAML merge key
// specifies. With report false it stays silent (the name pre-scans use it);
// otherwise it reports keys that are not strings and keys written twice.
func (d *decoder) pairs(n *yaml.Node, w where, path string, report bool, visiting map[*yaml.Node]bool) []pair {
	if visiting[n] {
		if report {
			d.errorf(n.Line, w, "%s: <<: a mapping cannot merge itself", path)
		}
		return nil
	}

	out := make([]pair, 0, len(n.Content)/2)
	var merges []pair
	first := keySet{list: make([]*yaml.Node, 0, min(len(n.Content)/2, smallKeys))}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !d.spend(n.Line) {
			return out
		}
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		switch {
		case k == nil || v == nil:
			continue
		case isMerge(k):
			merges = append(merges, pair{k, v})
			continue
		case k.Kind != yaml.ScalarNode:
			if report {
				d.errorf(k.Line, w, "%s: keys must be strings, got %s", path, describe(k))
			}
			continue
		}
		if prev := first.get(k.Value); prev != nil {
			if report {
				d.errorf(k.Line, w, "%s: key %q appears twice (first at line %d)", path, short(k.Value), prev.Line)
			}
			continue
		}
		first.add(k)
		out = append(out, pair{k, v})
	}
	if len(merges) == 0 {
		return out
	}
	// Merged mappings may merge others in turn: visiting holds the chain,
	// so that one that merges itself (through aliases) ends the recursion.
	if visiting == nil {
		visiting = map[*yaml.Node]bool{}
	}
	visiting[n] = true
	defer delete(visiting, n)
	for _, m := range merges {
		var sources []*yaml.Node
		switch m.v.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{m.v}
		case yaml.SequenceNode:
			for _, s := range m.v.Content {
				sources = append(sources, resolve(s))
			}
		default:
			sources = []*yaml.Node{m.v} // reported below
		}
		for _, src := range sources {
			if src == nil || src.Kind != yaml.MappingNode {
				if report {
					d.errorf(m.k.Line, w, "%s: <<: must be a mapping or a list of mappings, got %s", path, describe(m.v))
				}
				break
			}
			for _, p := range d.pairs(src, w, path, report, visiting) {
				if first.get(p.k.Value) == nil {
					first.add(p.k)
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// keySet records the keys of one mapping seen so far. A mapping holds a
// dozen keys, so a slice scanned in order is cheaper than a map (a config
// may hold tens of thousands of routes, each a mapping); past smallKeys
// keys (a file that is mostly mistakes, or a fuzzer's) a map takes over so
// the check never turns quadratic.
type keySet struct {
	list  []*yaml.Node
	byKey map[string]*yaml.Node
}

const smallKeys = 16

// get returns the first key node with k's value, or nil.
func (ks *keySet) get(k string) *yaml.Node {
	if ks.byKey != nil {
		return ks.byKey[k]
	}
	for _, n := range ks.list {
		if n.Value == k {
			return n
		}
	}
	return nil
}

func (ks *keySet) add(k *yaml.Node) {
	switch {
	case ks.byKey != nil:
		ks.byKey[k.Value] = k
	case len(ks.list) < smallKeys:
		ks.list = append(ks.list, k)
	default:
		ks.byKey = make(map[string]*yaml.Node, 2*smallKeys)
		for _, n := range ks.list {
			ks.byKey[n.Value] = n
		}
		ks.byKey[k.Value] = k
	}
}

// has reports whether the set holds key.
func (ks *keySet) has(key string) bool { return ks.get(key) != nil }

// mappingHook, set only by a test, sees every mapping the decoder reads
// and the keys it takes: docs/config.md is checked against them
// (TestConfigDoc).
var mappingHook func(path string, fs fields)

// mapping decodes a YAML mapping whose keys must all be in fs. path names the
// mapping in messages ("session", "rpc"). It returns the keys given a value
// other than null (nil when n is not a mapping), so a caller can tell a
// required key that is missing from one whose value was wrong (and already
// reported).
func (d *decoder) mapping(n *yaml.Node, w where, path string, fs fields) *keySet {
	if mappingHook != nil {
		mappingHook(path, fs)
	}
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, w, "%s: must be a mapping, got %s", path, describe(n))
		return nil
	}
	given := &keySet{list: make([]*yaml.Node, 0, min(len(n.Content)/2, smallKeys))}
	for _, p := range d.pairs(n, w, path, true, nil) {
		if d.halted {
			break
		}
		f, ok := fs[p.k.Value]
		if !ok {
			d.errorf(p.k.Line, w, "%s: unknown key %q%s", path, short(p.k.Value), suggest(p.k.Value, fs))
			continue
		}
		if isNull(p.v) {
			continue
		}
		given.add(p.k)
		f(p.v)
	}
	return given
}

// lookup returns the key and value of key in mapping n (merged keys
// included), or nils, without reporting anything: the actor and route
// decoders read their name first so that every message about their other
// keys can carry it.
func (d *decoder) lookup(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	// The common case, a key written in the mapping itself, needs no
	// flattening: a key written there wins over any merged one.
	merges := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind == yaml.ScalarNode && k.Value == key && !isMerge(k) {
			return k, resolve(n.Content[i+1])
		}
		merges = merges || isMerge(k)
	}
	if !merges {
		return nil, nil
	}
	for _, p := range d.pairs(n, where{}, "", false, nil) {
		if p.k.Value == key {
			return p.k, p.v
		}
	}
	return nil, nil
}

// sequence calls f for every item of a YAML sequence.
func (d *decoder) sequence(n *yaml.Node, w where, path string, f func(i int, item *yaml.Node)) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, w, "%s: must be a list, got %s", path, describe(n))
		return
	}
	for i, item := range n.Content {
		if !d.spend(item.Line) {
			return
		}
		f(i, resolve(item))
	}
}

func (d *decoder) scalar(n *yaml.Node, w where, key, want string, tag string) bool {
	if n.Kind == yaml.ScalarNode && n.Tag == tag {
		return true
	}
	d.errorf(n.Line, w, "%s: must be %s, got %s", key, want, describe(n))
	return false
}

func (d *decoder) str(dst *string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if d.scalar(n, w, key, "a string", "!!str") {
			*dst = n.Value
		}
	}
}

func (d *decoder) nonEmpty(dst *string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if !d.scalar(n, w, key, "a string", "!!str") {
			return
		}
		if n.Value == "" {
			d.errorf(n.Line, w, "%s: must not be empty", key)
			return
		}
		*dst = n.Value
	}
}

// address decodes a listen address: host:port, where host may be empty
// (every interface) and port may be 0 (any free port, for tests).
func (d *decoder) address(dst *string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		var v string
		d.nonEmpty(&v, w, key)(n)
		if v == "" {
			return
		}
		if _, _, err := net.SplitHostPort(v); err != nil {
			d.errorf(n.Line, w, "%s: %q is not host:port (such as \"127.0.0.1:7000\" or \":7000\")", key, short(v))
			return
		}
		*dst = v
	}
}

// urlPath decodes an HTTP path, which starts with a slash.
func (d *decoder) urlPath(dst *string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		var v string
		d.nonEmpty(&v, w, key)(n)
		if v == "" {
			return
		}
		if v[0] != '/' {
			d.errorf(n.Line, w, "%s: %q must start with \"/\"", key, short(v))
			return
		}
		*dst = v
	}
}

func (d *decoder) boolean(dst *bool, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if !d.scalar(n, w, key, "true or false", "!!bool") {
			return
		}
		switch n.Value {
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			_ = n.Decode(dst) // True, FALSE, ...: cannot fail, the tag is !!bool
		}
	}
}

// int64In decodes an integer in [lo, hi]. The message gives the range so a
// reader knows at once what is allowed.
func (d *decoder) int64In(dst *int64, w where, key string, lo, hi int64) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if !d.scalar(n, w, key, "an integer", "!!int") {
			return
		}
		v, err := intValue(n)
		if err != nil {
			d.errorf(n.Line, w, "%s: %s is out of range %s", key, short(n.Value), rangeText(lo, hi))
			return
		}
		if v < lo || v > hi {
			d.errorf(n.Line, w, "%s: %d is out of range %s", key, v, rangeText(lo, hi))
			return
		}
		*dst = v
	}
}

// intValue returns the value of an !!int scalar. strconv reads every plain
// decimal, hex, octal and binary integer exactly as yaml.v3 does, without
// the decoder yaml.v3 builds for each Node.Decode; the rest (such as
// "1__000", whose underscores YAML drops) goes through yaml.v3.
func intValue(n *yaml.Node) (int64, error) {
	if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
		return v, nil
	}
	var v int64
	err := n.Decode(&v)
	return v, err
}

func (d *decoder) intIn(dst *int, w where, key string, lo, hi int64) func(*yaml.Node) {
	return func(n *yaml.Node) {
		v := int64(*dst)
		d.int64In(&v, w, key, lo, hi)(n)
		*dst = int(v)
	}
}

// parseDuration reads a Go duration string, reporting a value that is not
// one. It checks no range: each caller's key says what is allowed.
func (d *decoder) parseDuration(n *yaml.Node, w where, key string) (time.Duration, bool) {
	if !d.scalar(n, w, key, `a duration such as "15s"`, "!!str") {
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.errorf(n.Line, w, "%s: %q is not a duration such as \"15s\" or \"250ms\"", key, short(n.Value))
		return 0, false
	}
	return v, true
}

// duration decodes a duration above zero: SPEC §2 makes 0 invalid unless a
// key says what it means.
func (d *decoder) duration(dst *time.Duration, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		v, ok := d.parseDuration(n, w, key)
		if !ok {
			return
		}
		if v <= 0 {
			d.errorf(n.Line, w, "%s: must be above zero, got %q", key, short(n.Value))
			return
		}
		*dst = v
	}
}

// durationOrZero decodes a duration of a key that gives 0 a meaning ("off",
// "keep forever"): zero is allowed, a negative value is not.
func (d *decoder) durationOrZero(dst *time.Duration, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		v, ok := d.parseDuration(n, w, key)
		if !ok {
			return
		}
		if v < 0 {
			d.errorf(n.Line, w, "%s: must not be negative, got %q", key, short(n.Value))
			return
		}
		*dst = v
	}
}

// durationAtMost decodes a duration above zero and at most limit.
func (d *decoder) durationAtMost(dst *time.Duration, w where, key string, limit time.Duration) func(*yaml.Node) {
	return func(n *yaml.Node) {
		v := *dst
		d.duration(&v, w, key)(n)
		if v > limit {
			d.errorf(n.Line, w, "%s: %s is above the limit of %s", key, short(n.Value), durationText(limit))
			return
		}
		*dst = v
	}
}

// durationText writes a whole number of seconds as "60s" rather than
// time.Duration's "1m0s", as an operator would write it in the file.
func durationText(v time.Duration) string {
	if v%time.Second == 0 {
		return strconv.FormatInt(int64(v/time.Second), 10) + "s"
	}
	return v.String()
}

func (d *decoder) enum(dst *string, w where, key string, allowed []string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if !d.scalar(n, w, key, "one of "+strings.Join(allowed, ", "), "!!str") {
			return
		}
		if !slices.Contains(allowed, n.Value) {
			d.errorf(n.Line, w, "%s: %q is not one of %s", key, short(n.Value), strings.Join(allowed, ", "))
			return
		}
		*dst = n.Value
	}
}

func (d *decoder) strList(dst *[]string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		d.sequence(n, w, key, func(_ int, item *yaml.Node) {
			if d.scalar(item, w, key, "a string", "!!str") {
				*dst = append(*dst, item.Value)
			}
		})
	}
}

// describe names what a node holds, for "must be X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := short(n.Value)
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", v)
		case "!!int":
			return "the integer " + v
		case "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		}
		return fmt.Sprintf("%q", v)
	}
	return "nothing"
}

// maxQuoted is how much of a bad value a message quotes: enough to recognise
// it, never a whole line of garbage.
const maxQuoted = 40

// short cuts s to maxQuoted bytes for a message, marking the cut.
func short(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}

func rangeText(lo, hi int64) string {
	if hi == math.MaxInt64 || hi == math.MaxInt32 {
		return fmt.Sprintf("(at least %d)", lo)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

// suggest names the known key closest to a mistyped one, so "bindng" says
// `did you mean "binding"?`.
func suggest(key string, fs fields) string {
	if s, ok := synonyms[key]; ok && fs[s] != nil {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	best, bestDist := "", 3
	for k := range fs {
		if dist := editDistance(key, k); dist < bestDist || (dist == bestDist && k < best) {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
