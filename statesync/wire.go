package statesync

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// The state frame, format 1 (docs/rooms.md section 8.2). All integers are
// unsigned LEB128 varints, minimal, at most 8 bytes, and at most 2^53 but
// for a value's zigzag integer; strings are a varint length and UTF-8.
//
//	format u8 = 1 | kind u8 | flags u8 | base | version |
//	SNAPSHOT only: room id (string), tick_hz u8 | count | count × op
//	END: format u8 = 1 | kind u8 = 3 | flags u8 = 0 | reason | message
//
//	op:    u8 op (1 SET, 2 REMOVE) · shared · added · added × key · SET: value
//	value: 0 false · 1 true · 2 integer (zigzag) · 3 float64 (8 bytes,
//	       big-endian) · 4 string · 5 table (a new empty map)
const (
	// Format is the one format byte there is.
	Format = 1
	// FlagContinues says the next state frame holds more ops of the same
	// version; it is the only flag.
	FlagContinues = 1
	// maxVarintBytes is the longest varint a frame may hold.
	maxVarintBytes = 8
	// maxZigzag is the largest zigzag integer: 2^53's (2^54); -2^53's is
	// 2^54 - 1.
	maxZigzag = 2 * MaxSafe
)

// Value tags on the wire.
const (
	tagFalse  = 0
	tagTrue   = 1
	tagInt    = 2
	tagFloat  = 3
	tagString = 4
	tagTable  = 5
)

// FrameKind is a state frame's kind byte.
type FrameKind uint8

// The kinds of state frame.
const (
	// SnapshotFrame replaces the state: its ops build it from {}.
	SnapshotFrame FrameKind = 1
	// DeltaFrame takes the state at Base to Version.
	DeltaFrame FrameKind = 2
	// EndFrame ends the member's room: Reason and Message, nothing else.
	EndFrame FrameKind = 3
)

// String names the kind as section 8.2 does.
func (k FrameKind) String() string {
	switch k {
	case SnapshotFrame:
		return "SNAPSHOT"
	case DeltaFrame:
		return "DELTA"
	case EndFrame:
		return "END"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// Frame is one state frame, as Decode reads it and AppendFrame writes it.
// RoomID and TickHz are a SNAPSHOT's only; Reason and Message an END's.
type Frame struct {
	Kind      FrameKind
	Continues bool
	Base      uint64
	Version   uint64
	RoomID    string
	TickHz    uint8
	Ops       []Op
	Reason    string
	Message   string
}

// AppendFrame appends f's body as it stands (one frame, not split): the
// canonical bytes, which Decode reads back as f. It refuses what Decode
// would refuse, so that nothing it writes is a frame a client rejects.
func AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	if err := checkHeader(f); err != nil {
		return dst, err
	}
	if f.Kind == EndFrame {
		dst = append(dst, Format, byte(EndFrame), 0)
		dst = appendString(dst, f.Reason)
		return appendString(dst, f.Message), nil
	}
	if err := checkOps(f.Ops, nil, 1); err != nil {
		return dst, err
	}
	dst = appendHeader(dst, f.Kind, f.Continues, f.Base, f.Version, f.RoomID, f.TickHz)
	dst = appendUvarint(dst, uint64(len(f.Ops)))
	var prev Path
	for i := range f.Ops {
		dst = appendOp(dst, prev, &f.Ops[i])
		prev = f.Ops[i].Path
	}
	return dst, nil
}

// checkHeader is AppendFrame's check of everything but the ops.
func checkHeader(f *Frame) error {
	switch f.Kind {
	case EndFrame:
		if f.Continues {
			return fmt.Errorf("statesync: an END has no flags")
		}
		if !utf8.ValidString(f.Reason) || !utf8.ValidString(f.Message) {
			return fmt.Errorf("statesync: an END's reason and message must be valid UTF-8")
		}
		return nil
	case SnapshotFrame:
		if f.Base != 0 {
			return fmt.Errorf("statesync: a SNAPSHOT's base is 0, got %d", f.Base)
		}
		if !utf8.ValidString(f.RoomID) {
			return fmt.Errorf("statesync: the room id must be valid UTF-8")
		}
	case DeltaFrame:
		if f.Base >= f.Version {
			return fmt.Errorf("statesync: a DELTA's base %d is not below its version %d", f.Base, f.Version)
		}
	default:
		return fmt.Errorf("statesync: %v is not a state frame's kind", f.Kind)
	}
	if f.Version > MaxSafe {
		return fmt.Errorf("statesync: version %d is above 2^53", f.Version)
	}
	return nil
}

// checkOps checks ops for everything a decoder checks: a known op, 1 to
// 16 keys of valid UTF-8, path order after prev (the last op before them
// in the version), and values a frame can carry. first numbers the first
// op in messages.
func checkOps(ops []Op, prev Path, first int) error {
	for i := range ops {
		op := &ops[i]
		n := first + i
		if op.Kind != Set && op.Kind != Remove {
			return fmt.Errorf("statesync: op %d: %v is not SET or REMOVE", n, op.Kind)
		}
		if len(op.Path) == 0 || len(op.Path) > MaxDepth {
			return fmt.Errorf("statesync: op %d: a path of %d keys: a path is 1 to %d keys", n, len(op.Path), MaxDepth)
		}
		for j, k := range op.Path {
			if !utf8.ValidString(k) {
				return fmt.Errorf("statesync: op %d: key %d is not valid UTF-8", n, j+1)
			}
		}
		if prev != nil {
			switch Compare(op.Path, prev) {
			case 0:
				return fmt.Errorf("statesync: op %d: %s twice", n, op.Path.Pointer())
			case -1:
				return fmt.Errorf("statesync: op %d: %s comes before the previous op's %s (path order)", n, op.Path.Pointer(), prev.Pointer())
			}
		}
		prev = op.Path
		if op.Kind == Remove {
			continue
		}
		v := op.Value
		switch v.kind {
		case KindBool, KindInt, KindTable:
		case KindFloat:
			f := math.Float64frombits(v.bits)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("statesync: op %d: %s: %v", n, op.Path.Pointer(), errNonFinite)
			}
		case KindString:
			if !utf8.ValidString(v.str) {
				return fmt.Errorf("statesync: op %d: %s: a string must be valid UTF-8", n, op.Path.Pointer())
			}
		default:
			return fmt.Errorf("statesync: op %d: %s: a SET without a value", n, op.Path.Pointer())
		}
	}
	return nil
}

// appendHeader appends everything before the count.
func appendHeader(dst []byte, kind FrameKind, continues bool, base, version uint64, roomID string, tickHz uint8) []byte {
	var flags byte
	if continues {
		flags = FlagContinues
	}
	dst = append(dst, Format, byte(kind), flags)
	dst = appendUvarint(dst, base)
	dst = appendUvarint(dst, version)
	if kind == SnapshotFrame {
		dst = appendString(dst, roomID)
		dst = append(dst, tickHz)
	}
	return dst
}

// headerSize is appendHeader's length.
func headerSize(kind FrameKind, base, version uint64, roomID string) int {
	n := 3 + uvarintLen(base) + uvarintLen(version)
	if kind == SnapshotFrame {
		n += stringSize(roomID) + 1
	}
	return n
}

// appendOp appends op after prev, the previous op's path in the same frame
// (nil for a frame's first op, where shared restarts at 0).
func appendOp(dst []byte, prev Path, op *Op) []byte {
	s := shared(prev, op.Path)
	dst = append(dst, byte(op.Kind))
	dst = appendUvarint(dst, uint64(s))
	dst = appendUvarint(dst, uint64(len(op.Path)-s))
	for _, k := range op.Path[s:] {
		dst = appendString(dst, k)
	}
	if op.Kind == Set {
		dst = appendValue(dst, op.Value)
	}
	return dst
}

// opSize is appendOp's length.
func opSize(prev Path, op *Op) int {
	s := shared(prev, op.Path)
	n := 1 + uvarintLen(uint64(s)) + uvarintLen(uint64(len(op.Path)-s))
	for _, k := range op.Path[s:] {
		n += stringSize(k)
	}
	if op.Kind == Set {
		n += valueSize(op.Value)
	}
	return n
}

func appendValue(dst []byte, v Value) []byte {
	switch v.kind {
	case KindBool:
		if v.bits == 1 {
			return append(dst, tagTrue)
		}
		return append(dst, tagFalse)
	case KindInt:
		return appendUvarint(append(dst, tagInt), zigzag(int64(v.bits)))
	case KindFloat:
		return binary.BigEndian.AppendUint64(append(dst, tagFloat), v.bits)
	case KindString:
		return appendString(append(dst, tagString), v.str)
	}
	return append(dst, tagTable)
}

func valueSize(v Value) int {
	switch v.kind {
	case KindInt:
		return 1 + uvarintLen(zigzag(int64(v.bits)))
	case KindFloat:
		return 9
	case KindString:
		return 1 + stringSize(v.str)
	}
	return 1
}

// zigzag maps signed to unsigned: 0, -1, 1, -2, ... to 0, 1, 2, 3, ...
func zigzag(n int64) uint64 { return uint64(n<<1) ^ uint64(n>>63) }

// unzigzag is zigzag's inverse.
func unzigzag(z uint64) int64 { return int64(z>>1) ^ -int64(z&1) }

// appendUvarint appends v as a minimal LEB128 varint (the callers keep v
// within 8 bytes' 56 bits).
func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendString(dst []byte, s string) []byte {
	return append(appendUvarint(dst, uint64(len(s))), s...)
}

func stringSize(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// AppendEnd appends an END frame (section 8.2) with reason and message,
// the message made valid UTF-8 (a Lua string need not be) and cut at a
// character boundary so that the body is at most limit bytes (0: no
// limit), as an error's message is cut to fit (SPEC §7).
func AppendEnd(dst []byte, reason, message string, limit int) []byte {
	reason = strings.ToValidUTF8(reason, "\uFFFD")
	message = strings.ToValidUTF8(message, "\uFFFD")
	if limit > 0 {
		room := limit - 3 - stringSize(reason) - uvarintLen(uint64(len(message)))
		if room < 0 {
			room = 0
		}
		if len(message) > room {
			cut := room
			for cut > 0 && !utf8.RuneStart(message[cut]) {
				cut--
			}
			message = message[:cut]
		}
	}
	dst = append(dst, Format, byte(EndFrame), 0)
	dst = appendString(dst, reason)
	return appendString(dst, message)
}
