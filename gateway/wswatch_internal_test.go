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
