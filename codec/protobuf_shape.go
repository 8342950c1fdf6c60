package codec

import (
	lua "github.com/yuin/gopher-lua"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A Lua table does not say whether it is a list or an object when it is
// empty, or when a map's keys happen to be 1..n; AppendJSON guesses from the
// keys (an empty table is {}, keys 1..n are an array), which is right for
// JSON bodies but would make protojson refuse `items = {}` for a repeated
// field, a very common response. When encoding a message, the message knows
// the answer, so shapesFor walks the value along the message's descriptor
// and records the tables whose shape the field decides. It changes no
// table: the answers go to the encoder in a map, nil in the usual case where
// no table needs one.

// wellKnown is the package of the well-known types, whose JSON forms
// protojson writes specially (a Timestamp is a string, a Struct an object).
const wellKnown = "google.protobuf."

// shapeWalker carries the walk's state: the answers found so far and the
// tables on the path from the root, which stop a table that contains itself
// from being walked forever (the encoder then reports the cycle).
type shapeWalker struct {
	arrayMeta *lua.LTable
	shapes    map[*lua.LTable]bool // true: list, false: object; nil until needed
	path      []*lua.LTable
	stack     [16]*lua.LTable // path's first backing array: no allocation for shallow messages
}

// shapesFor returns the shape overrides for encoding v as md, or nil.
func shapesFor(L *lua.LState, md protoreflect.MessageDescriptor, v lua.LValue) map[*lua.LTable]bool {
	w := shapeWalker{arrayMeta: stateOf(L).arrayMeta}
	w.path = w.stack[:0]
	w.message(md, v)
	return w.shapes
}

// enter pushes t on the path, refusing a table already on it and a path
// deeper than the encoder would write.
func (w *shapeWalker) enter(t *lua.LTable) bool {
	if len(w.path) >= MaxDepth {
		return false
	}
	for _, a := range w.path {
		if a == t {
			return false
		}
	}
	w.path = append(w.path, t)
	return true
}

func (w *shapeWalker) leave() { w.path = w.path[:len(w.path)-1] }

func (w *shapeWalker) set(t *lua.LTable, list bool) {
	if w.shapes == nil {
		w.shapes = make(map[*lua.LTable]bool)
	}
	w.shapes[t] = list
}

// message walks a value that encodes as md.
func (w *shapeWalker) message(md protoreflect.MessageDescriptor, v lua.LValue) {
	t, ok := v.(*lua.LTable)
	if !ok || !w.enter(t) {
		return
	}
	defer w.leave()
	switch md.FullName() {
	case "google.protobuf.Struct":
		w.object(t)
		return
	case "google.protobuf.ListValue":
		w.list(t)
		return
	}
	if len(md.FullName()) > len(wellKnown) && string(md.FullName()[:len(wellKnown)]) == wellKnown {
		// The others are scalars or strings in JSON, a Value may be
		// anything (its table keeps AppendJSON's guess), and an Any's shape
		// depends on its @type.
		return
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		w.field(fd, t.RawGetString(string(fd.Name())))
		if json := fd.JSONName(); json != string(fd.Name()) {
			w.field(fd, t.RawGetString(json))
		}
	}
}

// field walks one field's value.
func (w *shapeWalker) field(fd protoreflect.FieldDescriptor, v lua.LValue) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return
	}
	switch {
	case fd.IsList():
		w.list(t)
		if md := fd.Message(); md != nil && w.enter(t) {
			for i := 1; i <= t.Len(); i++ {
				w.message(md, t.RawGetInt(i))
			}
			w.leave()
		}
	case fd.IsMap():
		w.object(t)
		if md := fd.MapValue().Message(); md != nil && w.enter(t) {
			for k, ev := t.Next(lua.LNil); k != lua.LNil; k, ev = t.Next(k) {
				w.message(md, ev)
			}
			w.leave()
		}
	case fd.Message() != nil:
		w.message(fd.Message(), t)
	}
}

// list makes an empty table a list; any other table keeps its own shape
// (a table with string keys in a list's place is an error protojson
// reports, not something to silently drop).
func (w *shapeWalker) list(t *lua.LTable) {
	if t.Metatable == w.arrayMeta {
		return
	}
	if k, _ := t.Next(lua.LNil); k == lua.LNil {
		w.set(t, true)
	}
}

// object makes a table that AppendJSON would write as an array (a marked
// one, or one keyed 1..n) an object keyed "1".."n".
func (w *shapeWalker) object(t *lua.LTable) {
	if t.Metatable == w.arrayMeta || t.Len() > 0 {
		w.set(t, false)
	}
}
