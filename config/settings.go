package config

import (
	"math"
	"strconv"

	"gopkg.in/yaml.v3"
)

// An actor's settings (SPEC §11) are free-form: the decoder checks nothing
// about their keys but their type, and turns the YAML into the plain data
// shield.settings() copies into Lua tables. Only what the JSON <-> Lua
// mapping of SPEC §8 can carry is accepted, so that a value never changes
// on its way into a script:
//
//	mapping      map[string]any (keys must be strings: a Lua script reading
//	             settings.levels[1] would not find a key written `1:`)
//	sequence     []any
//	string       string (also dates, which YAML would make timestamps)
//	integer      int64
//	float        float64 (finite: JSON has no Inf or NaN)
//	true, false  bool
//	null         Null{}
//
// Every key and item spends from the decoder's budget, so aliases cannot
// blow a small file up into a huge settings tree.

// settings decodes an actor's settings, which must be a mapping.
func (d *decoder) settings(n *yaml.Node, w where) map[string]any {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n.Line, w, "settings: must be a mapping, got %s", describe(n))
		return nil
	}
	if n.Tag != "!!map" {
		d.errorf(n.Line, w, "settings: the YAML tag %s is not supported", short(n.Tag))
		return nil
	}
	return d.settingsMapping(n, w, "settings")
}

// settingsMapping converts a mapping of settings; path names it in
// messages ("settings.levels[0]").
func (d *decoder) settingsMapping(n *yaml.Node, w where, path string) map[string]any {
	ps := d.pairs(n, w, path, true, nil) // reports keys that are not scalars, and duplicates
	m := make(map[string]any, len(ps))
	for _, p := range ps {
		if d.halted {
			break
		}
		if p.k.Tag != "!!str" {
			d.errorf(p.k.Line, w, "%s: keys must be strings, got %s (quote it)", path, describeKey(p.k))
			continue
		}
		if v, ok := d.settingsValue(p.v, w, path+"."+short(p.k.Value)); ok {
			m[p.k.Value] = v
		}
	}
	return m
}

// settingsValue converts one settings value. It reports false, after an
// error, for a value that has no place in the JSON <-> Lua mapping.
func (d *decoder) settingsValue(n *yaml.Node, w where, path string) (any, bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		if n.Tag != "!!map" {
			d.errorf(n.Line, w, "%s: the YAML tag %s is not supported", path, short(n.Tag))
			return nil, false
		}
		return d.settingsMapping(n, w, path), true
	case yaml.SequenceNode:
		if n.Tag != "!!seq" {
			d.errorf(n.Line, w, "%s: the YAML tag %s is not supported", path, short(n.Tag))
			return nil, false
		}
		list := make([]any, 0, len(n.Content))
		d.sequence(n, w, path, func(i int, item *yaml.Node) {
			if v, ok := d.settingsValue(item, w, path+"["+strconv.Itoa(i)+"]"); ok {
				list = append(list, v)
			}
		})
		return list, true
	case yaml.ScalarNode:
		return d.settingsScalar(n, w, path)
	}
	d.errorf(n.Line, w, "%s: unsupported YAML value", path) // an alias yaml.v3 left unresolved
	return nil, false
}

// settingsScalar converts a scalar by its tag, which YAML resolved from
// the text (or the file gave explicitly).
func (d *decoder) settingsScalar(n *yaml.Node, w where, path string) (any, bool) {
	switch n.Tag {
	case "!!str", "!!timestamp":
		// A date stays the text written: Lua has no time type, and a
		// script compares or parses the string it sees in the file.
		return n.Value, true
	case "!!null":
		return Null{}, true
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	case "!!int":
		if v, err := intValue(n); err == nil {
			return v, true
		}
		d.errorf(n.Line, w, "%s: %s is not an integer of 64 bits", path, short(n.Value))
		return nil, false
	case "!!float":
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			err = n.Decode(&v) // .inf, .NaN, 1_000.5: YAML's own spellings
		}
		if err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
			return v, true
		}
		d.errorf(n.Line, w, "%s: %s is not a finite number", path, short(n.Value))
		return nil, false
	case "!!binary":
		var s string // the decoded bytes: Lua strings hold any bytes
		if err := n.Decode(&s); err == nil {
			return s, true
		}
	default:
		d.errorf(n.Line, w, "%s: the YAML tag %s is not supported", path, short(n.Tag))
		return nil, false
	}
	d.errorf(n.Line, w, "%s: %q is not a valid %s", path, short(n.Value), n.Tag)
	return nil, false
}

// describeKey names a mapping key that is not a string.
func describeKey(k *yaml.Node) string {
	if k.Tag == "!!null" {
		return "null"
	}
	return describe(k)
}
