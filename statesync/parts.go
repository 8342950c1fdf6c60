package statesync

import "fmt"

// AppendDelta appends to parts the DELTA frames that take a member from
// base to version with ops (a change set's, or View.Filter's), each body
// at most limit bytes (room.max_frame_bytes; 0 is no limit). A version
// that does not fit one frame is split at op boundaries: every part has
// the same base and version, all but the last CONTINUES set, and shared
// restarts at 0 in each (section 8.2). The parts share one new backing
// array, so a call allocates it and, when parts is short, its slice.
func AppendDelta(parts [][]byte, base, version uint64, ops []Op, limit int) ([][]byte, error) {
	return appendParts(parts, &Frame{Kind: DeltaFrame, Base: base, Version: version}, ops, limit)
}

// AppendSnapshot appends the SNAPSHOT frames of a room's state at version
// (ops as Snapshot, or View.Filter of it, makes them), split as
// AppendDelta splits; each part carries the room id and tick rate.
func AppendSnapshot(parts [][]byte, roomID string, tickHz uint8, version uint64, ops []Op, limit int) ([][]byte, error) {
	return appendParts(parts, &Frame{Kind: SnapshotFrame, Version: version, RoomID: roomID, TickHz: tickHz}, ops, limit)
}

// span is one part: ops[from:to], size bytes.
type span struct{ from, to, size int }

func appendParts(parts [][]byte, f *Frame, ops []Op, limit int) ([][]byte, error) {
	if err := checkHeader(f); err != nil {
		return parts, err
	}
	if err := checkOps(ops, nil, 1); err != nil {
		return parts, err
	}
	h := headerSize(f.Kind, f.Base, f.Version, f.RoomID)
	if limit > 0 && h+1 > limit {
		return parts, fmt.Errorf("statesync: a %v's header is %d bytes, no room for an op in the limit of %d", f.Kind, h, limit)
	}
	// Pass 1: where each part ends and its size, so that pass 2 writes
	// into one allocation of the right length. Most versions are one part;
	// the array keeps their span off the heap.
	var one [1]span
	spans := one[:0]
	total, from, sum := 0, 0, 0
	var prev Path
	for i := range ops {
		sz := opSize(prev, &ops[i])
		if limit > 0 && i > from && h+uvarintLen(uint64(i-from+1))+sum+sz > limit {
			size := h + uvarintLen(uint64(i-from)) + sum
			spans = append(spans, span{from, i, size})
			total += size
			from, sum = i, 0
			sz = opSize(nil, &ops[i]) // shared restarts at 0 in a part
		}
		if limit > 0 && i == from && h+1+sz > limit {
			return parts, fmt.Errorf("statesync: op %d (%s) needs a frame of %d bytes, above the limit of %d", i+1, ops[i].Path.Pointer(), h+1+sz, limit)
		}
		sum += sz
		prev = ops[i].Path
	}
	size := h + uvarintLen(uint64(len(ops)-from)) + sum
	spans = append(spans, span{from, len(ops), size})
	total += size

	buf := make([]byte, 0, total)
	for n, s := range spans {
		start := len(buf)
		buf = appendHeader(buf, f.Kind, n < len(spans)-1, f.Base, f.Version, f.RoomID, f.TickHz)
		buf = appendUvarint(buf, uint64(s.to-s.from))
		prev = nil
		for i := s.from; i < s.to; i++ {
			buf = appendOp(buf, prev, &ops[i])
			prev = ops[i].Path
		}
		parts = append(parts, buf[start:len(buf):len(buf)])
	}
	return parts, nil
}
