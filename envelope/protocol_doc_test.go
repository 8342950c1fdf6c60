package envelope

import (
	"os"
	"strings"
	"testing"
)

// TestProtocolDocExamples: the byte-exact frames docs/protocol.md shows a
// client developer are what the envelopes write, and the document still
// shows them.
func TestProtocolDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	for _, tc := range []struct {
		env   string
		frame Frame
		hex   string
	}{
		{NameIdlen, Frame{Kind: Request, RouteID: 1001, RequestID: 1, Body: []byte(`{"user":"alice"}`)},
			"00 00 00 18 01 00 03 e9 00 00 00 01 7b 22 75 73 65 72 22 3a 22 61 6c 69 63 65 22 7d"},
		{NameIdlen, Frame{Kind: Heartbeat}, "00 00 00 08 01 00 00 00 00 00 00 00"},
		{NameTypelen, Frame{Kind: Request, RouteID: 1001, RequestID: 1, Body: []byte(`{"user":"alice"}`)},
			"00 00 00 1c 01 01 03 e9 00 00 00 00 00 00 00 01 7b 22 75 73 65 72 22 3a 22 61 6c 69 63 65 22 7d"},
		{NameIdlen, Frame{Kind: Push, RouteID: 2101, Body: []byte(`{"player_id":"bob","x":1,"y":2}`)},
			"00 00 00 27 01 00 08 35 00 00 00 00 7b 22 70 6c 61 79 65 72 5f 69 64 22 3a 22 62 6f 62 22 2c 22 78 22 3a 31 2c 22 79 22 3a 32 7d"},
	} {
		c := mustNew(t, tc.env, FromServer, 1<<16)
		got, err := c.AppendFrame(nil, &tc.frame)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(hx(t, tc.hex)) {
			t.Errorf("%s %v: the envelope writes % x, the document says %s", tc.env, tc.frame.Kind, got, tc.hex)
		}
		if !strings.Contains(text, tc.hex) {
			t.Errorf("docs/protocol.md no longer shows %s", tc.hex)
		}
	}
	// §12's traceparent frame, header in hex and body as text.
	const tp = `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`
	dl := Frame{Kind: Deadline, RequestID: 5, TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	got, err := mustNew(t, NameIdlen, FromServer, 1<<16).AppendFrame(nil, &dl)
	if err != nil {
		t.Fatal(err)
	}
	if want := "00 00 00 51 01 00 00 00 00 00 00 05"; string(got[:12]) != string(hx(t, want)) || string(got[12:]) != tp ||
		!strings.Contains(text, want+" "+tp) {
		t.Errorf("the traceparent frame is % x %s; docs/protocol.md §12 shows another", got[:12], got[12:])
	}
	// The login's response, split over two lines in the document.
	resp := Frame{Kind: Response, RouteID: 1001, RequestID: 1, Body: []byte(`{"player_id":"alice"}`)}
	got, _ = mustNew(t, NameIdlen, FromServer, 1<<16).AppendFrame(nil, &resp)
	if string(got[:12]) != string(hx(t, "00 00 00 1d 01 00 03 e9 00 00 00 01")) {
		t.Errorf("login response header % x", got[:12])
	}
}
