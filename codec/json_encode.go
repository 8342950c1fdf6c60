package codec

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// EncodeError is a Lua value that cannot be written as JSON. It is a plain
// error, not a client-visible code: a handler whose result does not encode
// has failed (client_rpc.handler_failed), and the message is for its author.
type EncodeError struct {
	// Path is the JSON Pointer of the bad value in the document being
	// written: object keys as written, array indices 0-based, "/" for the
	// whole value (as in SPEC section 6's schema messages).
	Path     string
	Reason   string
	tooLarge bool
}

// Error returns "json encode: <path>: <reason>".
func (e *EncodeError) Error() string {
	return "json encode: " + e.Path + ": " + e.Reason
}

// encodeFailure is an EncodeError being built: each container it passes
// through on the way out adds its segment, so a successful encode pays
// nothing for paths.
type encodeFailure struct {
	reason   string
	rev      []string // path segments, innermost first
	tooLarge bool
}

// Is makes errors.Is(err, ErrTooLarge) true for output over the limit.
func (e *EncodeError) Is(target error) bool { return target == ErrTooLarge && e.tooLarge }

func failf(format string, args ...any) *encodeFailure {
	return &encodeFailure{reason: fmt.Sprintf(format, args...)}
}

func (f *encodeFailure) at(segment string) *encodeFailure {
	f.rev = append(f.rev, segment)
	return f
}

func (f *encodeFailure) err() *EncodeError {
	if len(f.rev) == 0 {
		return &EncodeError{Path: "/", Reason: f.reason, tooLarge: f.tooLarge}
	}
	var b strings.Builder
	for i := len(f.rev) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(f.rev[i]))
	}
	return &EncodeError{Path: b.String(), Reason: f.reason, tooLarge: f.tooLarge}
}

// pointerEscaper escapes a JSON Pointer segment (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// DefaultMaxEncodeBytes bounds one encoding when SetMaxEncodeBytes was not
// called: a table that holds one large string many times would otherwise
// build gigabytes in a single call that nothing can interrupt.
const DefaultMaxEncodeBytes = 64 << 20

// ErrTooLarge is matched (errors.Is) by an *EncodeError for output over
// the VM's limit, so the runtime can answer resource_exhausted.
var ErrTooLarge = errors.New("codec: encoded output too large")

// SetMaxEncodeBytes sets the longest JSON (or protobuf JSON) one encoding
// in L may produce; the runtime sets lua.max_string_bytes.
func SetMaxEncodeBytes(L *lua.LState, n int) { stateOf(L).maxOut = n }

// AppendJSON appends v, encoded as the package comment describes (compact,
// keys sorted, no HTML escaping), to dst and returns the extended slice. On
// error it returns dst as it was and an *EncodeError. It reads tables raw and
// runs no Lua code; the service runtime also uses it for shield.json.encode.
func AppendJSON(dst []byte, L *lua.LState, v lua.LValue) ([]byte, error) {
	return appendJSONShaped(dst, L, v, nil)
}

// appendJSONShaped is AppendJSON with shape overrides: a table in shapes is
// written as an array (true) or an object (false) whatever its keys say.
// The protobuf codec uses it where the message, not the table, knows the
// shape: an empty table in a repeated field is [], and a map keyed 1..n is
// an object. shapes is nil for plain JSON.
func appendJSONShaped(dst []byte, L *lua.LState, v lua.LValue, shapes map[*lua.LTable]bool) ([]byte, error) {
	st := stateOf(L)
	e := encoder{L: L, st: st, buf: dst, shapes: shapes, max: len(dst) + st.maxOut}
	if st.maxOut <= 0 {
		e.max = len(dst) + DefaultMaxEncodeBytes
	}
	f := e.value(v)
	st.release()
	if f != nil {
		return dst, f.err()
	}
	return e.buf, nil
}

// encoder writes Lua values to buf; depth counts the tables around the
// value being written.
type encoder struct {
	L      *lua.LState
	st     *vmState
	buf    []byte
	max    int // len(buf) may not pass it: a table can repeat one big string
	depth  int
	shapes map[*lua.LTable]bool // see appendJSONShaped; nil for plain JSON
}

func (e *encoder) value(v lua.LValue) *encodeFailure {
	if len(e.buf) > e.max {
		return &encodeFailure{reason: fmt.Sprintf("encoded JSON exceeds %d bytes", e.max), tooLarge: true}
	}
	switch v := v.(type) {
	case lua.LString:
		if len(e.buf)+len(v) > e.max {
			return &encodeFailure{reason: fmt.Sprintf("encoded JSON exceeds %d bytes", e.max), tooLarge: true}
		}
		var ok bool
		if e.buf, ok = appendString(e.buf, string(v)); !ok {
			return failf("invalid UTF-8 in string %q", prefix(string(v)))
		}
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return failf("%v is not a JSON number", f)
		}
		e.buf = appendNumber(e.buf, f)
	case lua.LBool:
		e.buf = strconv.AppendBool(e.buf, bool(v))
	case *lua.LTable:
		return e.table(v)
	case *lua.LUserData:
		if tv, ok := v.Value.(Tabler); ok {
			return e.table(tv.Table(e.L))
		}
		if v != e.st.null {
			return failf("userdata cannot be encoded")
		}
		e.buf = append(e.buf, "null"...)
	case *lua.LNilType, nil:
		// nil only reaches here at the top or as a marked array's hole.
		e.buf = append(e.buf, "null"...)
	default:
		// Functions, threads (coroutines) and channels.
		return failf("a %s cannot be encoded", v.Type())
	}
	return nil
}

// prefix shortens s for quoting in an error message.
func prefix(s string) string {
	return s[:min(len(s), nearBytes)]
}

func (e *encoder) table(t *lua.LTable) *encodeFailure {
	if e.depth >= MaxDepth {
		return failf("nesting deeper than %d", MaxDepth)
	}
	// Only tables on the path from the root can close a cycle, and that
	// path is at most MaxDepth long, so a linear scan is cheap.
	for _, a := range e.st.ancestors {
		if a == t {
			return failf("table contains itself")
		}
	}
	e.depth++
	e.st.ancestors = append(e.st.ancestors, t)

	var f *encodeFailure
	n := t.Len() // #t: the last non-nil slot of the array part
	// A nil shapes map (plain JSON) finds nothing: the keys decide.
	isArray, shaped := e.shapes[t]
	if !shaped {
		isArray = t.Metatable == e.st.arrayMeta || n > 0 && isSequence(t, n)
	}
	if isArray {
		f = e.array(t, n)
	} else {
		f = e.object(t, n)
	}

	e.depth--
	e.st.ancestors[len(e.st.ancestors)-1] = nil
	e.st.ancestors = e.st.ancestors[:len(e.st.ancestors)-1]
	return f
}

// isSequence reports whether t's keys are exactly 1..n, given n = #t.
// gopher-lua keeps the keys 1..#t in the array part, ahead of every other
// key in iteration order, so it is enough that 1..n has no hole and nothing
// follows n.
func isSequence(t *lua.LTable, n int) bool {
	for i := 1; i <= n; i++ {
		if t.RawGetInt(i) == lua.LNil {
			return false
		}
	}
	k, _ := t.Next(boxNumber(float64(n)))
	return k == lua.LNil
}

// array writes t[1..n], a nil hole as null.
func (e *encoder) array(t *lua.LTable, n int) *encodeFailure {
	e.buf = append(e.buf, '[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		if f := e.value(t.RawGetInt(i)); f != nil {
			return f.at(strconv.Itoa(i - 1))
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

// object writes t as an object with sorted keys. Entries are gathered on the
// scratch stack; nested objects push above them, so they are read back by
// index (the stack may move as it grows).
func (e *encoder) object(t *lua.LTable, n int) *encodeFailure {
	st := e.st
	base := len(st.members)
	// The array part first: Next would box every index it returns.
	for i := 1; i <= n; i++ {
		if v := t.RawGetInt(i); v != lua.LNil {
			st.members = append(st.members, member{key: strconv.Itoa(i), val: v})
		}
	}
	// Then the hash part, which Next walks from the end of the array part
	// without allocating: its keys are stored boxed.
	var k, v lua.LValue = lua.LNil, nil
	if n > 0 {
		k = boxNumber(float64(n))
	}
	for k, v = t.Next(k); k != lua.LNil; k, v = t.Next(k) {
		key, f := objectKey(k)
		if f != nil {
			return f
		}
		st.members = append(st.members, member{key: key, val: v})
	}

	members := st.members[base:]
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for i := 1; i < len(members); i++ {
		if members[i].key == members[i-1].key {
			return failf("key %q is both a number and a string key", prefix(members[i].key))
		}
	}

	e.buf = append(e.buf, '{')
	for i := range len(members) {
		m := st.members[base+i]
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		var ok bool
		if e.buf, ok = appendString(e.buf, m.key); !ok {
			return failf("invalid UTF-8 in key %q", prefix(m.key))
		}
		e.buf = append(e.buf, ':')
		if f := e.value(m.val); f != nil {
			return f.at(m.key)
		}
	}
	e.buf = append(e.buf, '}')
	clear(st.members[base:])
	st.members = st.members[:base]
	return nil
}

// objectKey returns the JSON text of a hash-part key.
func objectKey(k lua.LValue) (string, *encodeFailure) {
	switch k := k.(type) {
	case lua.LString:
		return string(k), nil
	case lua.LNumber:
		f := float64(k)
		if f != math.Trunc(f) || math.Abs(f) >= 1e21 {
			return "", failf("number key %v is not an integer below 1e21", f)
		}
		// A positive integer key can be in the hash part: the patched
		// gopher-lua (third_party/gopher-lua/PATCHES.md) keeps a sparse one
		// there, and its Next goes on from it.
		return string(appendNumber(nil, f)), nil
	default:
		return "", failf("a %s key cannot be encoded", k.Type())
	}
}
