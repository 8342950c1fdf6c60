package envelope

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestDeadlineFrames: a client's declared deadline on each envelope, byte
// for byte (docs/protocol.md "Deadlines"): a frame of its own before the
// request on idlen and typelen, the request's deadline_ms on the legacy
// wrappers. Each decodes back to what was encoded.
func TestDeadlineFrames(t *testing.T) {
	body := hexOf(`{"deadline_ms":2500}`)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		env  string
		f    Frame
		want string // the frame as the client sends it
		text bool
	}{
		{NameIdlen, Frame{Kind: Deadline, RequestID: 5, DeadlineMS: 2500}, "0000001c 01 000000 00000005" + body, false},
		{NameTypelen, Frame{Kind: Deadline, RequestID: 5, DeadlineMS: 2500}, "00000020 01 08 0000 0000000000000005" + body, false},
		{NameDelimiter, Frame{Kind: Request, RouteID: 3, RequestID: 5, DeadlineMS: 2500, Body: []byte(`{}`)},
			`{"type":"request","route_id":3,"request_id":5,"deadline_ms":2500,"payload":{}}` + "\n", true},
		{NameLenprefix, Frame{Kind: Request, RouteID: 3, RequestID: 5, DeadlineMS: 2500},
			"00000041" + hexOf(`{"type":"request","route_id":3,"request_id":5,"deadline_ms":2500}`), false},
		// A traceparent (docs/tracing.md) rides in the same frame, alone
		// or beside the deadline.
		{NameIdlen, Frame{Kind: Deadline, RequestID: 5, TraceParent: tp}, "00000051 01 000000 00000005" + hexOf(`{"traceparent":"`+tp+`"}`), false},
		{NameTypelen, Frame{Kind: Deadline, RequestID: 5, DeadlineMS: 2500, TraceParent: tp},
			"00000068 01 08 0000 0000000000000005" + hexOf(`{"deadline_ms":2500,"traceparent":"`+tp+`"}`), false},
		{NameDelimiter, Frame{Kind: Request, RouteID: 3, RequestID: 5, TraceParent: tp, Body: []byte(`{}`)},
			`{"type":"request","route_id":3,"request_id":5,"traceparent":"` + tp + `","payload":{}}` + "\n", true},
	} {
		// The client encodes with a FromServer framer (it reads the
		// gateway's frames) and the gateway decodes with a FromClient one.
		enc := mustNew(t, c.env, FromServer, 1<<10)
		got, err := enc.AppendFrame(nil, &c.f)
		want := []byte(c.want)
		if !c.text {
			want = hx(t, c.want)
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: AppendFrame(%+v) = %q, %v; want %q", c.env, c.f, got, err, want)
		}
		back, err := Read(mustNew(t, c.env, FromClient, 1<<10), bufio.NewReader(bytes.NewReader(got)))
		if err != nil || !sameFrame(back, c.f) {
			t.Fatalf("%s: decoded %+v, %v; want %+v", c.env, back, err, c.f)
		}
	}
}

// TestBadDeadlineFrames: a deadline that is not exactly one is a protocol
// error, as any other misuse of route 0 (or of a wrapper field) is.
func TestBadDeadlineFrames(t *testing.T) {
	idlen := func(body string) string { return hexOf(body) }
	for _, c := range []struct {
		name, env, in string
		text          bool
		want          Reason
	}{
		{"idlen empty object", NameIdlen, "0000000a 01 000000 00000005" + idlen(`{}`), false, ReasonBadSystemFrame},
		{"idlen zero", NameIdlen, "00000019 01 000000 00000005" + idlen(`{"deadline_ms":0}`), false, ReasonBadSystemFrame},
		{"idlen negative", NameIdlen, "0000001a 01 000000 00000005" + idlen(`{"deadline_ms":-1}`), false, ReasonBadSystemFrame},
		{"idlen fraction", NameIdlen, "0000001b 01 000000 00000005" + idlen(`{"deadline_ms":1.5}`), false, ReasonBadSystemFrame},
		{"idlen string", NameIdlen, "0000001b 01 000000 00000005" + idlen(`{"deadline_ms":"1"}`), false, ReasonBadSystemFrame},
		{"idlen another key", NameIdlen, "0000001f 01 000000 00000005" + idlen(`{"deadline_ms":1,"x":2}`), false, ReasonBadSystemFrame},
		{"idlen not JSON", NameIdlen, "0000000b 01 000000 00000005 616263", false, ReasonBadSystemFrame},
		{"idlen body too long for one", NameIdlen, "00000090 01 000000 00000005", false, ReasonBadSystemFrame},
		{"idlen traceparent a number", NameIdlen, "00000019 01 000000 00000005" + idlen(`{"traceparent":1}`), false, ReasonBadSystemFrame},
		{"idlen traceparent empty", NameIdlen, "0000001a 01 000000 00000005" + idlen(`{"traceparent":""}`), false, ReasonBadSystemFrame},
		{"idlen traceparent too long", NameIdlen, "00000052 01 000000 00000005" + idlen(`{"traceparent":"`+strings.Repeat("a", 56)+`"}`), false, ReasonBadSystemFrame},
		{"idlen traceparent and another key", NameIdlen, "00000021 01 000000 00000005" + idlen(`{"traceparent":"x","x":2}`), false, ReasonBadSystemFrame},
		{"delimiter traceparent a number", NameDelimiter, `{"route_id":3,"request_id":5,"traceparent":1}` + "\n", true, ReasonBadWrapper},
		{"typelen on a route", NameTypelen, "00000020 01 08 0001 0000000000000005" + idlen(`{"deadline_ms":2500}`), false, ReasonBadType},
		{"typelen request_id 0", NameTypelen, "00000020 01 08 0000 0000000000000000" + idlen(`{"deadline_ms":2500}`), false, ReasonBadType},
		{"typelen no body", NameTypelen, "0000000c 01 08 0000 0000000000000005", false, ReasonBadType},
		{"delimiter deadline_ms string", NameDelimiter, `{"route_id":3,"request_id":5,"deadline_ms":"1"}` + "\n", true, ReasonBadWrapper},
		{"delimiter deadline_ms negative", NameDelimiter, `{"route_id":3,"request_id":5,"deadline_ms":-1}` + "\n", true, ReasonBadWrapper},
		{"delimiter type deadline", NameDelimiter, `{"type":"deadline","request_id":5,"deadline_ms":1}` + "\n", true, ReasonBadWrapper},
	} {
		in := []byte(c.in)
		if !c.text {
			in = hx(t, c.in)
		}
		f, err := Read(mustNew(t, c.env, FromClient, 1<<10), bufio.NewReader(bytes.NewReader(in)))
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Reason != c.want {
			t.Errorf("%s: read %+v, %v; want %s", c.name, f, err, c.want)
		}
	}
	// The gateway never sends one, and a legacy envelope never writes one.
	if _, err := mustNew(t, NameDelimiter, FromServer, 1<<10).AppendFrame(nil, &Frame{Kind: Deadline, RequestID: 5, DeadlineMS: 1}); err == nil {
		t.Error("delimiter encoded a Deadline frame")
	}
	if _, err := mustNew(t, NameIdlen, FromServer, 1<<10).AppendFrame(nil, &Frame{Kind: Deadline, DeadlineMS: 1}); err == nil {
		t.Error("idlen encoded a Deadline frame without a request_id")
	}
}
