package gateway

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
)

// header is a client's binary frame header (FIN, masked) announcing n
// payload bytes.
func header(n uint64) []byte {
	h := []byte{0x82, 0x80 | 127}
	h = binary.BigEndian.AppendUint64(h, n)
	return append(h, 1, 2, 3, 4)
}

// masked is a client's frame: FIN as fin, opcode op, masked, payload p
// (under 126 bytes).
func masked(fin bool, op byte, p []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	return append([]byte{b0, 0x80 | byte(len(p)), 1, 2, 3, 4}, p...)
}

func cat(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

// TestFrameWatchHeaderFaults: each header RFC 6455 forbids a client stops
// the reads with its fault, at the header's first byte, and good frames
// pass, whole or byte by byte.
func TestFrameWatchHeaderFaults(t *testing.T) {
	good := masked(true, 2, []byte("ok"))
	for _, tc := range []struct {
		name   string
		frames []byte
		want   watchFault
		at     int // where the faulty header begins
	}{
		{"a binary frame", append(header(3), 'a', 'b', 'c'), faultNone, 0},
		{"a text frame", masked(true, 1, []byte("hi")), faultNone, 0},
		{"a ping", masked(true, 9, []byte("p")), faultNone, 0},
		{"a ping of 125 bytes", masked(true, 9, make([]byte, 125)), faultNone, 0},
		{"a pong", masked(true, 10, nil), faultNone, 0},
		{"a close", masked(true, 8, []byte{0x03, 0xe8}), faultNone, 0},
		{"three fragments", cat(masked(false, 2, []byte("a")), masked(false, 0, []byte("b")), masked(true, 0, []byte("c"))), faultNone, 0},
		{"a ping between fragments", cat(masked(false, 1, []byte("a")), masked(true, 9, nil), masked(true, 0, []byte("b")), good), faultNone, 0},
		{"an unmasked binary frame", []byte{0x82, 0x01, 'a'}, faultUnmasked, 0},
		{"an unmasked close", []byte{0x88, 0x00}, faultUnmasked, 0},
		{"a good frame, then an unmasked one", cat(good, []byte{0x82, 0x01, 'a'}), faultUnmasked, len(good)},
		{"a fragmented ping", masked(false, 9, []byte("p")), faultControl, 0},
		{"a ping of 126 bytes", append([]byte{0x89, 0x80 | 126, 0, 126, 1, 2, 3, 4}, make([]byte, 126)...), faultControl, 0},
		{"opcode 3", cat(good, masked(true, 3, []byte("x"))), faultReserved, len(good)},
		{"opcode 7", masked(true, 7, nil), faultReserved, 0},
		{"opcode 11", masked(true, 11, nil), faultReserved, 0},
		{"opcode 15", masked(true, 15, nil), faultReserved, 0},
		{"RSV1 (compression, not negotiated)", []byte{0xc2, 0x81, 1, 2, 3, 4, 'x'}, faultReserved, 0},
		{"RSV3", []byte{0x92, 0x80, 1, 2, 3, 4}, faultReserved, 0},
		{"a continuation with no message open", cat(good, masked(true, 0, []byte("x"))), faultFragment, len(good)},
		{"a message inside a fragmented one", cat(masked(false, 2, []byte("a")), good), faultFragment, 7},
		{"a message too large over its fragments", cat(good, masked(false, 2, make([]byte, 100)), masked(true, 0, make([]byte, 100))), faultTooLarge, len(good) + 106},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := &frameWatch{limit: 150}
			if got, at := whole.scan(tc.frames); got != tc.want || at != tc.at {
				t.Fatalf("scan: %v at %d, want %v at %d", got, at, tc.want, tc.at)
			}
			split := &frameWatch{limit: 150}
			got := faultNone
			for i := range tc.frames {
				if got, _ = split.scan(tc.frames[i : i+1]); got != faultNone {
					break
				}
			}
			if got != tc.want {
				t.Fatalf("scan byte by byte: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFrameWatchServesFramesBeforeAFault: a read that holds good frames
// and then a faulty header passes the good frames; the next read fails.
func TestFrameWatchServesFramesBeforeAFault(t *testing.T) {
	good := masked(true, 2, []byte("ok"))
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	w := &frameWatch{Conn: a, limit: 8192}
	w.watch()
	go b.Write(cat(good, []byte{0x82, 0x01, 'a'}))
	buf := make([]byte, 64)
	n, err := w.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], good) {
		t.Fatalf("first read: %q, %v; want the good frame, no error", buf[:n], err)
	}
	if _, err := w.Read(buf); err != errBadFrame {
		t.Fatalf("second read: %v, want errBadFrame", err)
	}
	if w.fault() != faultUnmasked {
		t.Fatalf("fault %v", w.fault())
	}
}

// FuzzFrameWatchScan: any bytes, whole or cut at any point, give the same
// fault (the watch keeps its parse across reads), and none panics; a
// well-formed frame made of the input always passes.
func FuzzFrameWatchScan(f *testing.F) {
	f.Add(append(header(3), 'a', 'b', 'c'), uint(2))
	f.Add([]byte{0x82, 0x01, 'a'}, uint(1))
	f.Add([]byte{0x09, 0x81, 1, 2, 3, 4, 'p'}, uint(3))
	f.Add(header(1<<62), uint(5))
	f.Fuzz(func(t *testing.T, b []byte, cut uint) {
		whole, wholeAt := (&frameWatch{limit: 1024}).scan(b)
		if wholeAt < 0 || wholeAt > len(b) {
			t.Fatalf("fault at %d of %d bytes", wholeAt, len(b))
		}
		at := int(cut % uint(len(b)+1))
		split := &frameWatch{limit: 1024}
		got, _ := split.scan(b[:at])
		if got == faultNone {
			got, _ = split.scan(b[at:])
		}
		if got != whole {
			t.Fatalf("cut at %d: %v, whole: %v", at, got, whole)
		}
		// A good frame of b's first bytes (opcode from cut), then the rest
		// of b as its own message's fragments.
		p := b[:min(len(b), 125)]
		op := []byte{1, 2, 9, 10}[cut%4]
		frames := cat(masked(true, op, p), masked(false, 2, p), masked(true, 9, nil), masked(true, 0, p))
		if f, at := (&frameWatch{limit: 1024}).scan(frames); f != faultNone {
			t.Fatalf("good frames: %v at %d", f, at)
		}
	})
}
