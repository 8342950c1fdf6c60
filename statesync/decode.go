package statesync

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// FrameError is why bytes are not a state frame, or why a frame does not
// apply to the state a Tracker holds. Its message is the one
// clients/ts/src/room.ts gives for the same bytes: "state frame: byte N:
// ..." for what Decode refuses (N the offset of the field at fault in the
// body), "state frame: op N (...): ..." for what Apply refuses.
type FrameError struct {
	msg string
}

// Error is the message, as room.ts's StateFrameError has it.
func (e *FrameError) Error() string { return e.msg }

func errAt(off int, format string, args ...any) error {
	return &FrameError{msg: fmt.Sprintf("state frame: byte %d: ", off) + fmt.Sprintf(format, args...)}
}

// Decode reads one state frame body, checking every rule of section 8.2:
// the format, kind and flags, minimal varints of at most 8 bytes (none
// above 2^53 but an integer's), a SNAPSHOT's base 0 and a DELTA's base
// below its version, a count the ops match and nothing after them, each
// op's shared prefix (at most the previous path's length, and all of what
// the two paths share, so that the bytes are canonical), 1 to 16 keys,
// path order, value tags, floats that are finite and not integers,
// integers within ±2^53, and valid UTF-8. Whatever it accepts,
// AppendFrame writes back as the same bytes. It never panics, its work is
// bounded by len(b), and the Frame never aliases b.
func Decode(b []byte) (Frame, error) {
	r := reader{b: b}
	var f Frame
	format, err := r.byte("format")
	if err != nil {
		return f, err
	}
	if format != Format {
		return f, errAt(0, "format %d is not 1", format)
	}
	kind, err := r.byte("kind")
	if err != nil {
		return f, err
	}
	f.Kind = FrameKind(kind)
	if f.Kind < SnapshotFrame || f.Kind > EndFrame {
		return f, errAt(1, "kind %d is not 1 (SNAPSHOT), 2 (DELTA) or 3 (END)", kind)
	}
	flags, err := r.byte("flags")
	if err != nil {
		return f, err
	}
	if flags&^FlagContinues != 0 {
		return f, errAt(2, "flags 0x%02x: only bit 0 (CONTINUES) is defined", flags)
	}
	if f.Kind == EndFrame {
		if flags != 0 {
			return f, errAt(2, "flags 0x%02x: an END has no flags", flags)
		}
		if f.Reason, err = r.string("reason"); err != nil {
			return f, err
		}
		if f.Message, err = r.string("message"); err != nil {
			return f, err
		}
		if r.off < len(b) {
			return f, errAt(r.off, "trailing bytes after the END's message")
		}
		return f, nil
	}
	f.Continues = flags == FlagContinues
	baseAt := r.off
	if f.Base, err = r.uvarint("base"); err != nil {
		return f, err
	}
	if f.Version, err = r.uvarint("version"); err != nil {
		return f, err
	}
	if f.Kind == SnapshotFrame && f.Base != 0 {
		return f, errAt(baseAt, "a SNAPSHOT's base is 0, got %d", f.Base)
	}
	if f.Kind == DeltaFrame && f.Base >= f.Version {
		return f, errAt(baseAt, "a DELTA's base %d is not below its version %d", f.Base, f.Version)
	}
	if f.Kind == SnapshotFrame {
		if f.RoomID, err = r.string("room id"); err != nil {
			return f, err
		}
		if f.TickHz, err = r.byte("tick_hz"); err != nil {
			return f, err
		}
	}
	count, err := r.uvarint("count")
	if err != nil {
		return f, err
	}
	// An op is at least 3 bytes: the slice never outgrows the input.
	f.Ops = make([]Op, 0, min(count, uint64(len(b)-r.off)/3))
	var prev Path
	for i := uint64(1); i <= count; i++ {
		if r.off == len(b) {
			return f, errAt(r.off, "count %d, but the frame ends after %d of them", count, i-1)
		}
		op, err := r.op(int(i), prev)
		if err != nil {
			return f, err
		}
		f.Ops = append(f.Ops, op)
		prev = op.Path
	}
	if r.off < len(b) {
		return f, errAt(r.off, "trailing bytes after the last of count %d ops", count)
	}
	return f, nil
}

// reader reads a frame's fields, each error naming the field's offset.
type reader struct {
	b   []byte
	off int
}

func (r *reader) byte(field string) (byte, error) {
	if r.off >= len(r.b) {
		return 0, errAt(r.off, "truncated in the %s", field)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// varint reads a minimal varint of at most 8 bytes, without a bound on
// its value.
func (r *reader) varint(field string) (uint64, error) {
	start := r.off
	var v uint64
	for i := 0; ; i++ {
		if r.off >= len(r.b) {
			return 0, errAt(start, "truncated in the %s", field)
		}
		c := r.b[r.off]
		r.off++
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, errAt(start, "the %s is a varint that is not minimal", field)
			}
			return v, nil
		}
		if i == maxVarintBytes-1 {
			return 0, errAt(start, "the %s is a varint longer than 8 bytes", field)
		}
	}
}

// uvarint is a varint field other than an integer value: at most 2^53, so
// that a JavaScript number holds it exactly.
func (r *reader) uvarint(field string) (uint64, error) {
	start := r.off
	v, err := r.varint(field)
	if err == nil && v > MaxSafe {
		return 0, errAt(start, "the %s is above 2^53", field)
	}
	return v, err
}

// bytes reads a string field's length and bytes, and the field's offset.
func (r *reader) bytes(field string) ([]byte, int, error) {
	start := r.off
	n, err := r.uvarint(field + " length")
	if err != nil {
		return nil, start, err
	}
	if n > uint64(len(r.b)-r.off) {
		return nil, start, errAt(start, "truncated in the %s", field)
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, start, nil
}

func (r *reader) string(field string) (string, error) {
	s, at, err := r.bytes(field)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(s) {
		return "", errAt(at, "the %s is not valid UTF-8", field)
	}
	return string(s), nil
}

// op reads op number i, whose path must follow prev (nil for the first).
func (r *reader) op(i int, prev Path) (Op, error) {
	var op Op
	start := r.off
	code, _ := r.byte("op")
	op.Kind = OpKind(code)
	if op.Kind != Set && op.Kind != Remove {
		return op, errAt(start, "op %d: code %d is not 1 (SET) or 2 (REMOVE)", i, code)
	}
	sharedAt := r.off
	s, err := r.uvarint("shared")
	if err != nil {
		return op, err
	}
	if s > uint64(len(prev)) {
		return op, errAt(sharedAt, "op %d: shared %d is above the previous path's length %d", i, s, len(prev))
	}
	addedAt := r.off
	added, err := r.uvarint("added")
	if err != nil {
		return op, err
	}
	if s+added == 0 || s+added > MaxDepth {
		return op, errAt(addedAt, "op %d: shared %d + added %d keys: a path is 1 to %d keys", i, s, added, MaxDepth)
	}
	path := make(Path, s, s+added)
	copy(path, prev)
	for j := uint64(0); j < added; j++ {
		k, at, err := r.bytes("key")
		if err != nil {
			return op, err
		}
		if !utf8.Valid(k) {
			return op, errAt(at, "op %d: key %d is not valid UTF-8", i, s+j+1)
		}
		path = append(path, string(k))
	}
	op.Path = path
	if err := orderAfter(i, start, path, prev, int(s)); err != nil {
		return op, err
	}
	if op.Kind == Set {
		if op.Value, err = r.value(i); err != nil {
			return op, err
		}
	}
	return op, nil
}

// orderAfter checks that path, which repeats s keys of prev, comes after
// prev in path order and that s is all they share.
func orderAfter(i, at int, path, prev Path, s int) error {
	switch {
	case len(path) == s && s == len(prev):
		return errAt(at, "op %d: %s twice", i, path.Pointer())
	case len(path) == s || (s < len(prev) && path[s] < prev[s]):
		return errAt(at, "op %d: %s comes before the previous op's %s (path order)", i, path.Pointer(), prev.Pointer())
	case s < len(prev) && path[s] == prev[s]:
		return errAt(at, "op %d: shared %d, but the path shares %d keys with the previous op's %s", i, s, shared(path, prev), prev.Pointer())
	}
	return nil
}

func (r *reader) value(i int) (Value, error) {
	at := r.off
	tag, err := r.byte("value tag")
	if err != nil {
		return Value{}, err
	}
	switch tag {
	case tagFalse:
		return Bool(false), nil
	case tagTrue:
		return Bool(true), nil
	case tagInt:
		intAt := r.off
		z, err := r.varint("integer")
		if err != nil {
			return Value{}, err
		}
		if z > maxZigzag {
			return Value{}, errAt(intAt, "op %d: an integer beyond ±2^53", i)
		}
		return Value{kind: KindInt, bits: uint64(unzigzag(z))}, nil
	case tagFloat:
		if len(r.b)-r.off < 8 {
			return Value{}, errAt(r.off, "truncated in the float64")
		}
		floatAt := r.off
		bits := binary.BigEndian.Uint64(r.b[r.off:])
		r.off += 8
		f := math.Float64frombits(bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Value{}, errAt(floatAt, "op %d: a float64 that is not finite", i)
		}
		if f == math.Trunc(f) && math.Abs(f) <= MaxSafe {
			return Value{}, errAt(floatAt, "op %d: an integral float64 within ±2^53 (it is an integer, tag 2)", i)
		}
		return Value{kind: KindFloat, bits: bits}, nil
	case tagString:
		s, at, err := r.bytes("string")
		if err != nil {
			return Value{}, err
		}
		if !utf8.Valid(s) {
			return Value{}, errAt(at, "op %d: the string is not valid UTF-8", i)
		}
		return String(string(s)), nil
	case tagTable:
		return Table(), nil
	}
	return Value{}, errAt(at, "op %d: value tag %d is not 0 to 5", i, tag)
}
