package envelope

import (
	"bufio"
	"bytes"
	"testing"
)

// stateDelta is the DELTA body of docs/rooms.md §8.2's worked example.
const stateDelta = "01 02 00 29 2a 03 01 00 01 05 63 6c 6f 63 6b 02 54 01 00 03 07 70 6c 61 79 65 72 73 05 61 6c 69 63" +
	"65 01 78 03 40 0c 00 00 00 00 00 00 02 01 01 03 62 6f 62"

// TestLegacyStatePayload checks a Binary push (a room's state frame,
// docs/rooms.md §8.1): the header envelopes write its bytes as they are,
// the legacy ones a JSON string of their standard base64, which is the
// worked example's delimiter line; a client reads that string back as the
// raw JSON of the payload.
func TestLegacyStatePayload(t *testing.T) {
	body := hx(t, stateDelta)
	f := Frame{Kind: Push, RouteID: 65520, Route: "shield.room.state", Body: body, Binary: true}
	const line = `{"type":"push","route":"shield.room.state","route_id":65520,"payload":"AQIAKSoDAQABBWNsb2NrAlQBAAMHcGxheWVycwVhbGljZQF4A0AMAAAAAAAAAgEBA2JvYg=="}`
	idlen := hx(t, "00 00 00 3c 01 00 ff f0 00 00 00 00"+stateDelta)
	tests := []struct {
		env  string
		wire []byte
	}{
		{NameIdlen, idlen},
		{NameDelimiter, []byte(line + "\n")},
		{NameLenprefix, append([]byte{0, 0, 0, byte(len(line))}, line...)},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			c := mustNew(t, tt.env, FromServer, 1<<16)
			got, err := c.AppendFrame(nil, &f)
			if err != nil {
				t.Fatalf("AppendFrame: %v", err)
			}
			if !bytes.Equal(got, tt.wire) {
				t.Fatalf("AppendFrame\n got %q\nwant %q", got, tt.wire)
			}
			if n := c.FrameSize(&f); n != len(tt.wire)-streamFraming(tt.env) {
				t.Fatalf("FrameSize = %d, want %d", n, len(tt.wire)-streamFraming(tt.env))
			}
			read, err := Read(c, bufio.NewReader(bytes.NewReader(tt.wire)))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			want := string(body)
			if tt.env != NameIdlen {
				want = line[len(line)-len(`"AQIAKSoDAQABBWNsb2NrAlQBAAMHcGxheWVycwVhbGljZQF4A0AMAAAAAAAAAgEBA2JvYg=="}`) : len(line)-1]
			}
			if string(read.Body) != want || read.Binary {
				t.Fatalf("read body %q binary %v, want %q", read.Body, read.Binary, want)
			}
		})
	}
	// Without the mark, the same bytes are not JSON and the legacy
	// envelopes refuse them, as before.
	plain := f
	plain.Binary = false
	if _, err := mustNew(t, NameDelimiter, FromServer, 1<<16).AppendFrame(nil, &plain); err == nil {
		t.Fatal("a non-JSON payload was written")
	}
}
