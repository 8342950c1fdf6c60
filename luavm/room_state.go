package luavm

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/statesync"
)

// walkRoomState reads room.state into a statesync tree (docs/rooms.md
// §7.1) with raw access; maxValues is room.max_state_values. The first
// value that cannot be synced fails the walk, named by its JSON Pointer.
func walkRoomState(root *lua.LTable, maxValues int, null lua.LValue) (map[string]any, error) {
	w := &stateWalk{max: maxValues, null: null, onPath: map[*lua.LTable]statesync.Path{root: nil}}
	return w.table(root, nil)
}

type stateWalk struct {
	n, max int
	null   lua.LValue
	onPath map[*lua.LTable]statesync.Path
}

func (w *stateWalk) table(t *lua.LTable, path statesync.Path) (map[string]any, error) {
	out := make(map[string]any)
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		var key string
		switch k := k.(type) {
		case lua.LString:
			key = string(k)
			if len(key) < 1 || len(key) > 64 {
				err = fmt.Errorf("room state: %s: key %q: a key is 1 to 64 bytes", ptr(path), key)
				return
			}
			if !utf8.ValidString(key) {
				err = fmt.Errorf("room state: %s: key %q: a key must be valid UTF-8", ptr(path), key)
				return
			}
		case lua.LNumber:
			f := float64(k)
			if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				err = fmt.Errorf("room state: %s: key %s: keys must be strings or integers", ptr(path), k.String())
				return
			}
			key = strconv.FormatInt(int64(f), 10)
			if t.RawGetString(key) != lua.LNil {
				err = fmt.Errorf("room state: %s: keys %s and %q are one key on the wire", ptr(path), key, key)
				return
			}
		default:
			err = fmt.Errorf("room state: %s: key %s: keys must be strings or integers", ptr(path), k.String())
			return
		}
		p := append(path[:len(path):len(path)], key)
		w.n++
		if w.n > w.max {
			err = fmt.Errorf("room state: more than %d values (room.max_state_values)", w.max)
			return
		}
		var x any
		x, err = w.value(v, p)
		if err == nil {
			out[key] = x
		}
	})
	return out, err
}

func (w *stateWalk) value(v lua.LValue, p statesync.Path) (any, error) {
	switch v := v.(type) {
	case lua.LBool:
		return bool(v), nil
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("room state: %s: NaN or an infinity cannot be synced", p.Pointer())
		}
		if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
			return int64(f), nil
		}
		return f, nil
	case lua.LString:
		if !utf8.ValidString(string(v)) {
			return nil, fmt.Errorf("room state: %s: a string must be valid UTF-8", p.Pointer())
		}
		if len(v) > 4096 {
			return nil, fmt.Errorf("room state: %s: a string longer than 4096 bytes cannot be synced", p.Pointer())
		}
		return string(v), nil
	case *lua.LTable:
		if len(p) >= statesync.MaxDepth {
			return nil, fmt.Errorf("room state: /%s/...: deeper than %d levels", p[0], statesync.MaxDepth)
		}
		if at, ok := w.onPath[v]; ok {
			return nil, fmt.Errorf("room state: %s: a table that contains itself (also at %s)", p.Pointer(), ptr(at))
		}
		w.onPath[v] = p
		m, err := w.table(v, p)
		delete(w.onPath, v)
		return m, err
	}
	if w.null != nil && v == w.null {
		return nil, fmt.Errorf("room state: %s: shield.null cannot be synced: set the key to nil to remove it", p.Pointer())
	}
	name := v.Type().String()
	if name == "thread" {
		name = "coroutine"
	}
	return nil, fmt.Errorf("room state: %s: a %s cannot be synced", p.Pointer(), name)
}

// ptr is a path's pointer, "/" for the root.
func ptr(p statesync.Path) string {
	if len(p) == 0 {
		return "/"
	}
	return p.Pointer()
}
