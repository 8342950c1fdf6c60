package luavm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/shieldrpc/shield/statesync"
	lua "github.com/yuin/gopher-lua"
)

// walkState reads a room's Lua state table into a statesync tree (docs/rooms.md §7.1) with raw access
// (metatables ignored). maxValues is room.max_state_values: every table and scalar below the root counts one.
// null is the shield.null sentinel value (compare with ==), may be nil in tests.
//
// The walk takes the entries of each table in the order the table holds
// them, which costs no sorting. A state that breaks a rule is walked again
// with each table's keys sorted (bytewise, as strings), as statesync.Check
// walks a tree, so that the error names the first problem in path order and
// the message is the same from tick to tick.
func walkState(root *lua.LTable, maxValues int, null lua.LValue) (map[string]any, error) {
	w := stateWalkers.Get().(*stateWalker)
	defer w.release()
	tree, err := w.walk(root, maxValues, null, false)
	if err == nil {
		return tree, nil
	}
	if _, serr := w.walk(root, maxValues, null, true); serr != nil {
		return nil, serr
	}
	return nil, err // not reached: both walks apply the same rules
}

// stateKind is what a table key is on the wire. In path order, among keys
// that read the same, a bad key comes first (its problem is at the table's
// pointer), then an integer, then a string.
type stateKind uint8

const (
	stateKeyBad    stateKind = iota // neither a string nor an integer in ±2^53
	stateKeyInt                     // an integer, its decimal string on the wire
	stateKeyString                  // a string
)

// stateEntry is one entry of a table being walked.
type stateEntry struct {
	key  string // the key on the wire; for a bad key, how messages show it
	kind stateKind
	val  lua.LValue
}

// stateWalker walks one state. tables[i] is the table at path[:i], for the
// cycle check; entries is a stack of the entries of the tables being walked,
// a nested table's above its parent's.
type stateWalker struct {
	max, n  int
	null    lua.LValue
	sorted  bool
	tables  []*lua.LTable
	path    statesync.Path
	entries []stateEntry
}

// stateWalkers keeps walkers' stacks from tick to tick.
var stateWalkers = sync.Pool{New: func() any {
	return &stateWalker{
		tables:  make([]*lua.LTable, 0, statesync.MaxDepth+1),
		path:    make(statesync.Path, 0, statesync.MaxDepth+1),
		entries: make([]stateEntry, 0, 64),
	}
}}

// maxPooledEntries is the largest entry stack a pooled walker keeps.
const maxPooledEntries = 4096

func (w *stateWalker) walk(root *lua.LTable, maxValues int, null lua.LValue, sorted bool) (map[string]any, error) {
	w.max, w.n, w.null, w.sorted = maxValues, 0, null, sorted
	if len(w.tables)+len(w.path)+len(w.entries) != 0 { // a walk that panicked
		clear(w.tables[:cap(w.tables)])
		clear(w.path[:cap(w.path)])
		clear(w.entries[:cap(w.entries)])
		w.tables, w.path, w.entries = w.tables[:0], w.path[:0], w.entries[:0]
	}
	return w.table(root)
}

// release puts w back in the pool, holding nothing of the VM.
func (w *stateWalker) release() {
	if cap(w.entries) > maxPooledEntries {
		return
	}
	w.null = nil
	stateWalkers.Put(w)
}

// table is t as a map.
func (w *stateWalker) table(t *lua.LTable) (map[string]any, error) {
	base := len(w.entries)
	w.gather(t)
	if w.sorted {
		slices.SortFunc(w.entries[base:], func(a, b stateEntry) int {
			if c := strings.Compare(a.key, b.key); c != 0 {
				return c
			}
			return int(a.kind) - int(b.kind)
		})
	}
	m := make(map[string]any, len(w.entries)-base)
	w.tables = append(w.tables, t)
	err := w.fill(m, base)
	w.tables[len(w.tables)-1] = nil
	w.tables = w.tables[:len(w.tables)-1]
	clear(w.entries[base:])
	w.entries = w.entries[:base]
	return m, err
}

// gather pushes t's entries on w.entries: the array part by index, then the
// rest with Next from the array part's end, which boxes nothing (but the
// starting key) once a table has been walked before. Unsorted, it stops one
// entry past the values left, enough for fill to fail on the count.
func (w *stateWalker) gather(t *lua.LTable) {
	limit := math.MaxInt // sorted, the first problem in key order may be any entry
	if left := max(w.max-w.n, 0); !w.sorted && left < math.MaxInt-len(w.entries)-1 {
		limit = len(w.entries) + left + 1
	}
	n := t.Len()
	for i := 1; i <= n && len(w.entries) < limit; i++ {
		if v := t.RawGetInt(i); v != lua.LNil {
			w.entries = append(w.entries, stateEntry{key: strconv.Itoa(i), kind: stateKeyInt, val: v})
		}
	}
	var k lua.LValue = lua.LNil
	if n > 0 {
		k = arrayEnd(n)
	}
	for k, v := t.Next(k); k != lua.LNil && len(w.entries) < limit; k, v = t.Next(k) {
		w.entries = append(w.entries, stateEntryOf(k, v))
	}
}

// arrayEnds are the boxed numbers 1..len, the keys gather resumes Next from
// without allocating.
var arrayEnds = func() []lua.LValue {
	a := make([]lua.LValue, 64)
	for i := range a {
		a[i] = lua.LNumber(i + 1)
	}
	return a
}()

func arrayEnd(n int) lua.LValue {
	if n <= len(arrayEnds) {
		return arrayEnds[n-1]
	}
	return lua.LNumber(n)
}

// stateEntryOf is the entry of key k with value v.
func stateEntryOf(k, v lua.LValue) stateEntry {
	switch k := k.(type) {
	case lua.LString:
		return stateEntry{key: string(k), kind: stateKeyString, val: v}
	case lua.LNumber:
		f := float64(k)
		if f == math.Trunc(f) && math.Abs(f) <= statesync.MaxSafe {
			return stateEntry{key: strconv.FormatInt(int64(f), 10), kind: stateKeyInt, val: v}
		}
		return stateEntry{key: k.String(), val: v} // as tostring shows it: 1.5, 1e+300, +Inf
	case lua.LBool:
		return stateEntry{key: k.String(), val: v}
	}
	// A table's or a function's tostring is an address, which would
	// change the message from run to run: the type names it.
	return stateEntry{key: "a " + stateTypeName(k), val: v}
}

// fill sets m from the entries above base, in their order, with the checks
// in statesync.Check's order: the key, the depth, the count, the value.
func (w *stateWalker) fill(m map[string]any, base int) error {
	end := len(w.entries)
	for i := base; i < end; i++ {
		e := w.entries[i] // a copy: nested tables may move the stack
		switch e.kind {
		case stateKeyBad:
			return fmt.Errorf("room state: %s: key %s: keys must be strings or integers", w.path.Pointer(), e.key)
		case stateKeyString:
			if !utf8.ValidString(e.key) {
				return fmt.Errorf("room state: %s: key %q: a key must be valid UTF-8", w.path.Pointer(), e.key)
			}
			if len(e.key) == 0 || len(e.key) > statesync.MaxKeyBytes {
				return fmt.Errorf("room state: %s: key %q: a key is 1 to %d bytes", w.path.Pointer(), e.key, statesync.MaxKeyBytes)
			}
		case stateKeyInt:
			// Sorted, an integer key comes just before the string that
			// reads the same; unsorted, the map's size tells (below).
			if i+1 < end && w.entries[i+1].kind == stateKeyString && w.entries[i+1].key == e.key {
				return w.sameKey(e.key)
			}
		}
		if len(w.path) >= statesync.MaxDepth {
			return fmt.Errorf("room state: %s/...: deeper than %d levels", w.path[:1].Pointer(), statesync.MaxDepth)
		}
		if w.n++; w.n > w.max {
			return fmt.Errorf("room state: more than %d values (room.max_state_values)", w.max)
		}
		w.path = append(w.path, e.key)
		v, err := w.value(e.val)
		w.path[len(w.path)-1] = ""
		w.path = w.path[:len(w.path)-1]
		if err != nil {
			return err
		}
		m[e.key] = v
	}
	if len(m) == end-base {
		return nil
	}
	for i := base; i < end; i++ { // an integer key and a string the same
		if e := w.entries[i]; e.kind == stateKeyInt {
			if _, ok := m[e.key]; ok {
				for _, f := range w.entries[base:end] {
					if f.kind == stateKeyString && f.key == e.key {
						return w.sameKey(e.key)
					}
				}
			}
		}
	}
	return errors.New("room state: a key twice") // not reached
}

func (w *stateWalker) sameKey(k string) error {
	return fmt.Errorf("room state: %s: keys %s and %q are one key on the wire", w.path.Pointer(), k, k)
}

// value is v as a tree holds it; w.path is its path.
func (w *stateWalker) value(lv lua.LValue) (any, error) {
	switch v := lv.(type) {
	case lua.LString:
		if !utf8.ValidString(string(v)) {
			return nil, fmt.Errorf("room state: %s: a string must be valid UTF-8", w.path.Pointer())
		}
		if len(v) > statesync.MaxStringBytes {
			return nil, fmt.Errorf("room state: %s: a string longer than %d bytes cannot be synced", w.path.Pointer(), statesync.MaxStringBytes)
		}
		return string(v), nil
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("room state: %s: NaN or an infinity cannot be synced", w.path.Pointer())
		}
		if f == math.Trunc(f) && math.Abs(f) <= statesync.MaxSafe {
			return int64(f), nil // -0 is 0
		}
		return f, nil
	case lua.LBool:
		return bool(v), nil
	case *lua.LTable:
		for i, t := range w.tables {
			if t == v {
				at := "the root"
				if i > 0 {
					at = w.path[:i].Pointer()
				}
				return nil, fmt.Errorf("room state: %s: a table that contains itself (also at %s)", w.path.Pointer(), at)
			}
		}
		return w.table(v)
	case *lua.LUserData:
		if w.null != nil && lv == w.null {
			return nil, fmt.Errorf("room state: %s: shield.null cannot be synced: set the key to nil to remove it", w.path.Pointer())
		}
	}
	return nil, fmt.Errorf("room state: %s: a %s cannot be synced", w.path.Pointer(), stateTypeName(lv))
}

// stateTypeName names a value no state holds as messages do: a thread is a
// coroutine, and a client userdata a client.
func stateTypeName(v lua.LValue) string {
	switch v.Type() {
	case lua.LTThread:
		return "coroutine"
	case lua.LTUserData:
		if clientOf(v) != nil {
			return "client"
		}
	}
	return v.Type().String()
}
