package codec

import (
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// maxSafeInteger is 2^53: integer literals above it in magnitude are not all
// exact as Lua numbers, so SPEC gives them to Lua as decimal strings.
const maxSafeInteger = 1 << 53

// smallNumbers holds boxed Lua numbers 0..len-1. Turning an LNumber into an
// lua.LValue allocates; game messages are full of small counts, indices and
// coordinates, so sharing these immutable boxes saves most of those
// allocations. They are read-only after init, so every VM may share them.
var smallNumbers = func() (t [1024]lua.LValue) {
	for i := range t {
		t[i] = lua.LNumber(i)
	}
	return t
}()

// boxNumber returns f as an lua.LValue. A negative zero becomes 0 here, on
// purpose: it is what SPEC's integers-without-fraction output writes anyway.
func boxNumber(f float64) lua.LValue {
	if f >= 0 && f < float64(len(smallNumbers)) {
		if i := int(f); float64(i) == f {
			return smallNumbers[i]
		}
	}
	return lua.LNumber(f)
}

// DecodeJSON decodes the one JSON value data holds into a value of L's VM,
// as the package comment describes: objects become tables, arrays marked
// tables, null L's shield.null. The result never aliases data, so the
// caller may reuse it. Errors are *DecodeError (client_rpc.decode_failed).
// It runs no Lua code; the service runtime also uses it for
// shield.json.decode.
func DecodeJSON(L *lua.LState, data []byte) (lua.LValue, error) {
	st := stateOf(L)
	d := decoder{scanner: scanner{data: data}, L: L, st: st}
	d.skipWS()
	v, err := d.value()
	if err == nil {
		d.skipWS()
		if d.off < len(data) {
			err = d.unexpected("end of input")
		}
	}
	st.release()
	if err != nil {
		return lua.LNil, err
	}
	return v, nil
}

// decoder builds Lua values from the scanner's tokens by recursive descent;
// depth counts the arrays and objects around the current value.
type decoder struct {
	scanner
	L     *lua.LState
	st    *vmState
	depth int
}

func (d *decoder) value() (lua.LValue, error) {
	if d.off >= len(d.data) {
		return nil, d.unexpected("a value")
	}
	switch c := d.data[d.off]; c {
	case '"':
		text, buf, err := d.str(d.st.buf)
		d.st.buf = buf
		if err != nil {
			return nil, err
		}
		return lua.LString(text), nil
	case '{':
		return d.object()
	case '[':
		return d.array()
	case 't':
		return lua.LTrue, d.literal("true")
	case 'f':
		return lua.LFalse, d.literal("false")
	case 'n':
		return d.st.null, d.literal("null")
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			return d.number()
		}
		return nil, d.unexpected("a value")
	}
}

// number turns a number token into a Lua number, or into its decimal
// string for an integer literal above 2^53 in magnitude.
func (d *decoder) number() (lua.LValue, error) {
	lit, err := d.scanner.number()
	if err != nil {
		return nil, err
	}
	text := d.data[lit.start:lit.end]
	if lit.isInt {
		// At most 19 digits sit exactly in mant; more are above 10^19 > 2^53
		// because RFC 8259 forbids leading zeros.
		if lit.digits > maxExactDigits || lit.mant > maxSafeInteger {
			return lua.LString(text), nil
		}
		f := float64(lit.mant)
		if lit.neg {
			f = -f
		}
		return boxNumber(f), nil
	}
	if !lit.exp && lit.digits+lit.frac <= maxExactDigits {
		if f, ok := exactDecimal(lit.mant, lit.frac, lit.neg); ok {
			return boxNumber(f), nil
		}
	}
	// The syntax is already checked, so the only error left is a value
	// beyond float64 (1e400): an infinity could not be encoded again.
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return nil, d.fail(kindRange, lit.start, "number %q out of range", text[:min(len(text), nearBytes)])
	}
	return boxNumber(f), nil
}

// enter counts one more level of nesting, refusing to pass MaxDepth.
func (d *decoder) enter() error {
	if d.depth >= MaxDepth {
		return d.fail(kindDepth, d.off, "nesting deeper than %d", MaxDepth)
	}
	d.depth++
	d.off++ // the opening bracket
	d.skipWS()
	return nil
}

// array decodes an array into a marked sequence. Elements wait on the
// scratch stack so the table is created at its final size: gopher-lua
// otherwise reserves 32 slots for the first element.
func (d *decoder) array() (lua.LValue, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	st := d.st
	base := len(st.members)
	if !d.next(']') {
		for {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			st.members = append(st.members, member{val: v})
			d.skipWS()
			if d.next(',') {
				d.off++
				d.skipWS()
				continue
			}
			if d.next(']') {
				break
			}
			return nil, d.unexpected("',' or ']'")
		}
	}
	d.off++
	d.depth--
	elems := st.members[base:]
	t := d.L.CreateTable(len(elems), 0)
	for i, m := range elems {
		t.RawSetInt(i+1, m.val)
	}
	t.Metatable = st.arrayMeta
	clear(elems)
	st.members = st.members[:base]
	return t, nil
}

// object decodes an object into a table with string keys, sized once like
// array. Keys are interned per VM.
func (d *decoder) object() (lua.LValue, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	st := d.st
	base := len(st.members)
	if !d.next('}') {
		for {
			text, buf, err := d.keyText(st.buf)
			st.buf = buf
			if err != nil {
				return nil, err
			}
			key := st.intern(text)
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			st.members = append(st.members, member{boxed: key, val: v})
			d.skipWS()
			if d.next(',') {
				d.off++
				d.skipWS()
				continue
			}
			if d.next('}') {
				break
			}
			return nil, d.unexpected("',' or '}'")
		}
	}
	d.off++
	d.depth--
	members := st.members[base:]
	t := d.L.CreateTable(0, len(members))
	for _, m := range members {
		t.RawSetH(m.boxed, m.val) // a repeated key keeps its last value
	}
	clear(members)
	st.members = st.members[:base]
	return t, nil
}
