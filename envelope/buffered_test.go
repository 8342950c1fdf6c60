package envelope

import (
	"bufio"
	"bytes"
	"testing"
)

// TestBuffered: for every stream envelope, Buffered is true exactly when
// the reader's buffer holds the whole next frame (or a length that breaks
// the limit), so that ReadFrame then reads nothing more: the read that
// follows a true Buffered succeeds on a source that has nothing left.
func TestBuffered(t *testing.T) {
	f := Frame{Kind: Request, Route: "move", RouteID: 3001, RequestID: 5, Body: []byte(`{"x":1}`)}
	for _, name := range []string{NameIdlen, NameTypelen, NameLenprefix, NameDelimiter} {
		enc := mustNew(t, name, FromServer, 1<<16)
		dec := mustNew(t, name, FromClient, 1<<16)
		wire, err := enc.AppendFrame(nil, &f)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k <= len(wire); k++ {
			r := bufio.NewReaderSize(bytes.NewReader(wire[:k]), 4096)
			_, _ = r.Peek(k) // the first k bytes are buffered, the source is spent
			got := dec.Buffered(r)
			if want := k == len(wire); got != want {
				t.Fatalf("%s: %d of %d bytes buffered: Buffered %v", name, k, len(wire), got)
			}
			if got {
				if _, err := Read(dec, r); err != nil {
					t.Fatalf("%s: a buffered frame did not read: %v", name, err)
				}
			}
		}
	}
	// A length above the cap fails at once: buffered.
	small := mustNew(t, NameIdlen, FromClient, 64)
	r := bufio.NewReader(bytes.NewReader([]byte{0, 0, 1, 0}))
	_, _ = r.Peek(4)
	if !small.Buffered(r) {
		t.Fatal("a length above max_frame_bytes is not buffered")
	}
}
