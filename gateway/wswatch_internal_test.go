package gateway

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
)

// header is a client's binary frame header (FIN, masked) announcing n
// payload bytes.
func header(n uint64) []byte {
	h := []byte{0x82, 0x80 | 127}
	h = binary.BigEndian.AppendUint64(h, n)
	return append(h, 1, 2, 3, 4)
}

// TestFrameWatchBytesReadBeforeTheUpgrade: the bytes of a first frame that
// the HTTP server read past the upgrade request (its background byte, or
// more of a client that did not wait for the 101) are still scanned, so
// a header announcing more than the limit stops the connection whether it
// was read before the upgrade, across it, or after it (SPEC §3).
func TestFrameWatchBytesReadBeforeTheUpgrade(t *testing.T) {
	const request = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n"
	big := header(1 << 30)
	small := append(header(3), 'a', 'b', 'c')
	for _, tc := range []struct {
		name          string
		before, after []byte // read before watch, read after
		wantBig       bool
	}{
		{"all after", []byte(request), big, true},
		{"one byte before (the background read)", append([]byte(request), big[0]), big[1:], true},
		{"all before", append([]byte(request), big...), nil, true},
		{"a request before it, then the upgrade", []byte("GET /x HTTP/1.1\r\n\r\n" + request + string(big[:3])), big[3:], true},
		{"a small frame before, a big one after", append([]byte(request), small...), big, true},
		{"small frames only", append([]byte(request), small[:5]...), append(small[5:], small...), false},
		{"no header end: nothing kept", []byte("GET /ws HTTP/1.1\r\n"), small, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			w := &frameWatch{Conn: a, limit: 8192}
			go func() {
				b.Write(tc.before)
			}()
			buf := make([]byte, len(tc.before))
			if _, err := io.ReadFull(w, buf); err != nil {
				t.Fatal(err)
			}
			w.watch()
			if len(tc.after) > 0 {
				go b.Write(tc.after)
				_, err := io.ReadFull(w, make([]byte, len(tc.after)))
				if tc.wantBig != (err == errFrameTooLarge) {
					t.Fatalf("read after the upgrade: %v, want too large %v", err, tc.wantBig)
				}
			}
			if w.tooLarge() != tc.wantBig {
				t.Fatalf("tooLarge = %v, want %v", w.tooLarge(), tc.wantBig)
			}
			if strings.HasSuffix(tc.name, "nothing kept") && w.early != nil {
				t.Fatalf("kept %q before any header end", w.early)
			}
		})
	}
}

// TestFrameWatchHeaderFaults: each header RFC 6455 forbids a client stops
// the reads with its fault, and a good frame passes, whole or byte by
// byte.
func TestFrameWatchHeaderFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames []byte
		want   watchFault
	}{
		{"a masked binary frame", append(header(3), 'a', 'b', 'c'), faultNone},
		{"a masked ping", []byte{0x89, 0x81, 1, 2, 3, 4, 'p'}, faultNone},
		{"a ping of 125 bytes", append([]byte{0x89, 0x80 | 125, 1, 2, 3, 4}, make([]byte, 125)...), faultNone},
		{"a close", []byte{0x88, 0x82, 1, 2, 3, 4, 0x03, 0xe8}, faultNone},
		{"an unmasked binary frame", []byte{0x82, 0x01, 'a'}, faultUnmasked},
		{"an unmasked close", []byte{0x88, 0x00}, faultUnmasked},
		{"a good frame, then an unmasked one", append(append(header(1), 'a'), 0x82, 0x01, 'a'), faultUnmasked},
		{"a fragmented ping", []byte{0x09, 0x81, 1, 2, 3, 4, 'p'}, faultControl},
		{"a ping of 126 bytes", append([]byte{0x89, 0x80 | 126, 0, 126, 1, 2, 3, 4}, make([]byte, 126)...), faultControl},
		{"opcode 3", []byte{0x83, 0x81, 1, 2, 3, 4, 'x'}, faultOpcode},
		{"opcode 7", []byte{0x87, 0x80, 1, 2, 3, 4}, faultOpcode},
		{"opcode 11", []byte{0x8b, 0x80, 1, 2, 3, 4}, faultOpcode},
		{"opcode 15", []byte{0x8f, 0x80, 1, 2, 3, 4}, faultOpcode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := &frameWatch{limit: 8192}
			if got := whole.scan(tc.frames); got != tc.want {
				t.Fatalf("scan: %v, want %v", got, tc.want)
			}
			split := &frameWatch{limit: 8192}
			got := faultNone
			for i := range tc.frames {
				if got = split.scan(tc.frames[i : i+1]); got != faultNone {
					break
				}
			}
			if got != tc.want {
				t.Fatalf("scan byte by byte: %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzFrameWatchScan: any bytes, whole or cut at any point, give the same
// fault (the watch keeps its parse across reads), and none panics.
func FuzzFrameWatchScan(f *testing.F) {
	f.Add(append(header(3), 'a', 'b', 'c'), uint(2))
	f.Add([]byte{0x82, 0x01, 'a'}, uint(1))
	f.Add([]byte{0x09, 0x81, 1, 2, 3, 4, 'p'}, uint(3))
	f.Add(header(1<<62), uint(5))
	f.Fuzz(func(t *testing.T, b []byte, cut uint) {
		whole := (&frameWatch{limit: 1024}).scan(b)
		at := int(cut % uint(len(b)+1))
		split := &frameWatch{limit: 1024}
		got := split.scan(b[:at])
		if got == faultNone {
			got = split.scan(b[at:])
		}
		if got != whole {
			t.Fatalf("cut at %d: %v, whole: %v", at, got, whole)
		}
	})
}
