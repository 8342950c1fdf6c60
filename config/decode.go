package config

import (
	"fmt"
	"math"
	"slices"
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
}

// where is the actor and route a node belongs to, for messages.
type where struct {
	actor string
	route string
}

func (d *decoder) errorf(line int, w where, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Actor: w.actor, Route: w.route, Msg: fmt.Sprintf(format, args...)})
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

// mapping decodes a YAML mapping whose keys must all be in fs. path names the
// mapping in messages ("session", "rpc").
func (d *decoder) mapping(n *yaml.Node, w where, path string, fs fields) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, w, "%s: must be a mapping, got %s", path, describe(n))
		return false
	}
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, w, "%s: keys must be strings", path)
			continue
		}
		if seen[key] {
			d.errorf(k.Line, w, "%s: key %q appears twice", path, key)
			continue
		}
		seen[key] = true
		f, ok := fs[key]
		if !ok {
			d.errorf(k.Line, w, "%s: unknown key %q%s", path, key, suggest(key, fs))
			continue
		}
		if isNull(v) {
			continue
		}
		f(resolve(v))
	}
	return true
}

// sequence calls f for every item of a YAML sequence.
func (d *decoder) sequence(n *yaml.Node, w where, path string, f func(i int, item *yaml.Node)) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n.Line, w, "%s: must be a list, got %s", path, describe(n))
		return
	}
	for i, item := range n.Content {
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

func (d *decoder) boolean(dst *bool, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if d.scalar(n, w, key, "true or false", "!!bool") {
			_ = n.Decode(dst) // cannot fail: the tag is !!bool
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
		var v int64
		if err := n.Decode(&v); err != nil {
			d.errorf(n.Line, w, "%s: %q is out of range", key, n.Value)
			return
		}
		if v < lo || v > hi {
			d.errorf(n.Line, w, "%s: %d is out of range %s", key, v, rangeText(lo, hi))
			return
		}
		*dst = v
	}
}

func (d *decoder) intIn(dst *int, w where, key string, lo, hi int64) func(*yaml.Node) {
	return func(n *yaml.Node) {
		v := int64(*dst)
		d.int64In(&v, w, key, lo, hi)(n)
		*dst = int(v)
	}
}

func (d *decoder) duration(dst *time.Duration, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if !d.scalar(n, w, key, `a duration such as "15s"`, "!!str") {
			return
		}
		v, err := time.ParseDuration(n.Value)
		if err != nil {
			d.errorf(n.Line, w, "%s: %q is not a duration such as \"15s\" or \"250ms\"", key, n.Value)
			return
		}
		if v <= 0 {
			d.errorf(n.Line, w, "%s: must be above zero, got %q", key, n.Value)
			return
		}
		*dst = v
	}
}

func (d *decoder) enum(dst *string, w where, key string, allowed []string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if !d.scalar(n, w, key, "one of "+strings.Join(allowed, ", "), "!!str") {
			return
		}
		if !slices.Contains(allowed, n.Value) {
			d.errorf(n.Line, w, "%s: %q is not one of %s", key, n.Value, strings.Join(allowed, ", "))
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
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
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

func rangeText(lo, hi int64) string {
	if hi == math.MaxInt64 || hi == math.MaxInt32 {
		return fmt.Sprintf("(at least %d)", lo)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

// suggest names the known key closest to a mistyped one, so "bindng" says
// `did you mean "binding"?`.
func suggest(key string, fs fields) string {
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
