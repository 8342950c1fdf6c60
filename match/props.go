package match

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"unicode/utf8"
)

// The limits of a ticket's props and query (docs/rooms.md §4.5).
const (
	MaxEntries     = 16
	MaxKeyBytes    = 32
	MaxStringBytes = 64
)

var keyRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Props are a ticket's properties: each value a string, a float64 or a
// bool.
type Props map[string]any

// Term is one query term: Eq (a string, float64 or bool) for equality,
// or a numeric range with either bound left out (nil).
type Term struct {
	Eq       any
	Min, Max *float64
}

// Query is what a ticket asks of the others' props: every term must hold,
// and a term on a key the other lacks fails.
type Query map[string]Term

// Matches reports whether props satisfy every term of q.
func (q Query) Matches(props Props) bool {
	for k, term := range q {
		v, ok := props[k]
		if !ok {
			return false
		}
		if term.Eq != nil {
			if v != term.Eq {
				return false
			}
			continue
		}
		n, ok := v.(float64)
		if !ok || (term.Min != nil && n < *term.Min) || (term.Max != nil && n > *term.Max) {
			return false
		}
	}
	return true
}

// CheckProps checks props against §4.5; the error names the place
// (props.<key>), for shield.match.enqueue to raise as it is.
func CheckProps(props Props) error {
	if len(props) > MaxEntries {
		return fmt.Errorf("props: more than %d entries", MaxEntries)
	}
	for k, v := range props {
		if err := checkKey("props", k); err != nil {
			return err
		}
		if err := checkScalar("props."+k, v); err != nil {
			return err
		}
	}
	return nil
}

// CheckQuery checks a query against §4.5.
func CheckQuery(q Query) error {
	if len(q) > MaxEntries {
		return fmt.Errorf("query: more than %d terms", MaxEntries)
	}
	for k, term := range q {
		if err := checkKey("query", k); err != nil {
			return err
		}
		where := "query." + k
		switch {
		case term.Eq != nil:
			if err := checkScalar(where, term.Eq); err != nil {
				return err
			}
		case term.Min == nil && term.Max == nil:
			return fmt.Errorf("%s: a {min = n, max = n} range needs min or max", where)
		case term.Min != nil && term.Max != nil && *term.Min > *term.Max:
			return fmt.Errorf("%s: min %v is above max %v", where, *term.Min, *term.Max)
		}
		for _, b := range []*float64{term.Min, term.Max} {
			if b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0)) {
				return fmt.Errorf("%s: a bound must be a finite number", where)
			}
		}
	}
	return nil
}

func checkKey(what, k string) error {
	if len(k) < 1 || len(k) > MaxKeyBytes || !keyRE.MatchString(k) {
		return fmt.Errorf("%s: key %q: 1 to %d bytes of a-z, 0-9 and _, not starting with a digit", what, k, MaxKeyBytes)
	}
	return nil
}

func checkScalar(where string, v any) error {
	switch v := v.(type) {
	case bool:
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: the number must be finite", where)
		}
	case string:
		if len(v) > MaxStringBytes || !utf8.ValidString(v) {
			return fmt.Errorf("%s: a string of at most %d bytes of UTF-8 is required", where, MaxStringBytes)
		}
	default:
		return fmt.Errorf("%s: a string, number or boolean is required, got %T", where, v)
	}
	return nil
}

// MarshalJSON writes a term as the Lua API writes it (§4.5): the scalar
// of an equality, or {"min": n, "max": n} with a bound left out.
func (t Term) MarshalJSON() ([]byte, error) {
	if t.Eq != nil {
		return json.Marshal(t.Eq)
	}
	r := map[string]float64{}
	if t.Min != nil {
		r["min"] = *t.Min
	}
	if t.Max != nil {
		r["max"] = *t.Max
	}
	return json.Marshal(r)
}

// UnmarshalJSON reads what MarshalJSON writes; CheckQuery then checks it.
func (t *Term) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r, ok := v.(map[string]any)
	if !ok {
		*t = Term{Eq: v}
		return nil
	}
	*t = Term{}
	for k, x := range r {
		f, ok := x.(float64)
		switch {
		case !ok:
			return fmt.Errorf("a range bound must be a number, got %T", x)
		case k == "min":
			t.Min = &f
		case k == "max":
			t.Max = &f
		default:
			return fmt.Errorf("a range is {min, max}, got key %q", k)
		}
	}
	return nil
}
