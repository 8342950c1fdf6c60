package statesync

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Limits of section 7.1 and 8.2.
const (
	// MaxDepth is the most keys a path has: a state is at most 16 levels.
	MaxDepth = 16
	// MaxStringBytes is the longest string value a state may hold.
	MaxStringBytes = 4096
	// MaxKeyBytes is the longest key; a key is at least 1 byte.
	MaxKeyBytes = 64
	// MaxSafe is 2^53: an integral number of at most this magnitude is an
	// integer on the wire (value tag 2), and no varint but a value's
	// integer exceeds it, so that a JavaScript number holds every field
	// exactly.
	MaxSafe = 1 << 53
)

// Kind is what a synced value is.
type Kind uint8

// The kinds. The zero Kind is no value at all (the zero Value), which
// nothing encodes.
const (
	KindBool Kind = iota + 1
	KindInt
	KindFloat
	KindString
	KindTable
)

// String names the kind as messages do.
func (k Kind) String() string {
	switch k {
	case KindBool:
		return "boolean"
	case KindInt:
		return "integer"
	case KindFloat:
		return "float64"
	case KindString:
		return "string"
	case KindTable:
		return "table"
	}
	return "kind " + strconv.Itoa(int(k))
}

// Value is one op's value: a scalar, or a new empty table (whose entries
// follow as their own ops). It is a small struct rather than an interface
// so that building and encoding ops boxes nothing.
type Value struct {
	kind Kind
	bits uint64 // the bool (0, 1), the int64, or the float64's bits
	str  string
}

// Bool is a boolean value.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, bits: 1}
	}
	return Value{kind: KindBool}
}

// Int is an integer value. One beyond ±2^53 is held as a float64, as the
// number rule of section 7.1 says (a Lua number that large is a float).
func Int(n int64) Value {
	if n > MaxSafe || n < -MaxSafe {
		return Value{kind: KindFloat, bits: math.Float64bits(float64(n))}
	}
	return Value{kind: KindInt, bits: uint64(n)}
}

// Number is a number value under section 7.1's rule: an integer when f is
// integral and at most 2^53 in magnitude (-0 is 0), else a float64. NaN and
// the infinities make a Value that Check refuses and no frame encodes.
func Number(f float64) Value {
	if f == math.Trunc(f) && math.Abs(f) <= MaxSafe {
		return Value{kind: KindInt, bits: uint64(int64(f))}
	}
	return Value{kind: KindFloat, bits: math.Float64bits(f)}
}

// String is a string value.
func String(s string) Value { return Value{kind: KindString, str: s} }

// Table is a new empty table.
func Table() Value { return Value{kind: KindTable} }

// Kind reports what v is (0 for the zero Value).
func (v Value) Kind() Kind { return v.kind }

// AsBool is a boolean value's boolean.
func (v Value) AsBool() bool { return v.kind == KindBool && v.bits == 1 }

// AsInt is an integer value's integer.
func (v Value) AsInt() int64 {
	if v.kind != KindInt {
		return 0
	}
	return int64(v.bits)
}

// AsFloat is a number value as a float64 (an integer converted).
func (v Value) AsFloat() float64 {
	switch v.kind {
	case KindInt:
		return float64(int64(v.bits))
	case KindFloat:
		return math.Float64frombits(v.bits)
	}
	return 0
}

// AsString is a string value's string.
func (v Value) AsString() string { return v.str }

// Equal reports whether v and w are the same value (a float64 compared by
// its bits, which is equality for every value a frame can carry).
func (v Value) Equal(w Value) bool { return v == w }

// Any is v as a tree holds it: bool, int64, float64, string, or a new
// empty map[string]any for a table; nil for the zero Value.
func (v Value) Any() any {
	switch v.kind {
	case KindBool:
		return v.bits == 1
	case KindInt:
		return int64(v.bits)
	case KindFloat:
		return math.Float64frombits(v.bits)
	case KindString:
		return v.str
	case KindTable:
		return map[string]any{}
	}
	return nil
}

// GoString prints v for test failures.
func (v Value) GoString() string {
	switch v.kind {
	case KindTable:
		return "{}"
	case KindString:
		return strconv.Quote(v.str)
	case 0:
		return "<none>"
	}
	return fmt.Sprint(v.Any())
}

// ValueOf is a tree's value as a Value: a map[string]any is a table (its
// entries are not looked at), any Go integer or float a number under
// Number's rule. It refuses what no state may hold.
func ValueOf(x any) (Value, error) {
	switch x := x.(type) {
	case bool:
		return Bool(x), nil
	case int:
		return Int(int64(x)), nil
	case int64:
		return Int(x), nil
	case int32:
		return Int(int64(x)), nil
	case int16:
		return Int(int64(x)), nil
	case int8:
		return Int(int64(x)), nil
	case uint:
		return Number(float64(x)), nil
	case uint64:
		return Number(float64(x)), nil
	case uint32:
		return Int(int64(x)), nil
	case uint16:
		return Int(int64(x)), nil
	case uint8:
		return Int(int64(x)), nil
	case float32:
		return ValueOf(float64(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Value{}, errNonFinite
		}
		return Number(x), nil
	case string:
		return String(x), nil
	case map[string]any:
		return Table(), nil
	}
	return Value{}, fmt.Errorf("a %T cannot be synced", x)
}

var errNonFinite = fmt.Errorf("NaN or an infinity cannot be synced")

// Check reports the first value of tree (in path order) that section 7.1
// does not allow, with the runtime's message: "room state: <JSON Pointer>:
// <why>". maxValues is room.max_state_values: every table and scalar below
// the root counts one. A room's runtime walks its Lua table with these
// rules and Lua's own (functions, shield.null, key types, cycles), which
// are the walk's and not here.
func Check(tree map[string]any, maxValues int) error {
	c := checker{max: maxValues}
	return c.table(tree, make(Path, 0, MaxDepth))
}

type checker struct {
	max, n int
}

func (c *checker) table(m map[string]any, path Path) error {
	for _, k := range sortedKeys(m) {
		if !utf8.ValidString(k) {
			return fmt.Errorf("room state: %s: key %q: a key must be valid UTF-8", path.Pointer(), k)
		}
		if len(k) == 0 || len(k) > MaxKeyBytes {
			return fmt.Errorf("room state: %s: key %q: a key is 1 to %d bytes", path.Pointer(), k, MaxKeyBytes)
		}
		p := append(path, k)
		if len(p) > MaxDepth {
			return fmt.Errorf("room state: /%s/...: deeper than %d levels", escapeKey(p[0]), MaxDepth)
		}
		if c.n++; c.n > c.max {
			return fmt.Errorf("room state: more than %d values (room.max_state_values)", c.max)
		}
		switch x := m[k].(type) {
		case map[string]any:
			if err := c.table(x, p); err != nil {
				return err
			}
		case string:
			if !utf8.ValidString(x) {
				return fmt.Errorf("room state: %s: a string must be valid UTF-8", p.Pointer())
			}
			if len(x) > MaxStringBytes {
				return fmt.Errorf("room state: %s: a string longer than %d bytes cannot be synced", p.Pointer(), MaxStringBytes)
			}
		default:
			if _, err := ValueOf(x); err != nil {
				return fmt.Errorf("room state: %s: %v", p.Pointer(), err)
			}
		}
	}
	return nil
}

// sortedKeys is m's keys in path order (bytewise).
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Clone is a deep copy of a tree, its numbers normalised to section 7.1's
// rule (so that a tree built with int, or with float64 for integers,
// compares equal to the one a Tracker holds). Values no state may hold are
// copied as they are.
func Clone(tree map[string]any) map[string]any {
	out := make(map[string]any, len(tree))
	for k, v := range tree {
		out[k] = cloneAny(v)
	}
	return out
}

// cloneAny is one tree value copied as Clone copies it.
func cloneAny(x any) any {
	if m, ok := x.(map[string]any); ok {
		return Clone(m)
	}
	if v, err := ValueOf(x); err == nil {
		return v.Any()
	}
	return x
}
