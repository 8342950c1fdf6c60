package envelope

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// TestGolden checks frames byte for byte against hex written by hand from
// SPEC.md's layouts, in both directions.
func TestGolden(t *testing.T) {
	tests := []struct {
		name  string
		env   string
		side  Side // the side that decodes these bytes
		frame Frame
		wire  string // hex for TCP, or text when the envelope is delimiter
	}{
		{"idlen heartbeat", NameIdlen, FromClient, Frame{Kind: Heartbeat},
			"00000008 01 000000 00000000"},
		{"idlen request", NameIdlen, FromClient,
			Frame{Kind: Request, RouteID: 3001, RequestID: 5, Body: []byte(`{"x":1}`)},
			"0000000f 01 000bb9 00000005 7b2278223a317d"},
		{"idlen notify", NameIdlen, FromClient,
			Frame{Kind: Notify, RouteID: 0xfffffe, Body: []byte("ab")},
			"0000000a 01 fffffe 00000000 6162"},
		{"idlen response", NameIdlen, FromServer,
			Frame{Kind: Response, RouteID: 1001, RequestID: 0xffffffff, Body: []byte("{}")},
			"0000000a 01 0003e9 ffffffff 7b7d"},
		{"idlen push", NameIdlen, FromServer,
			Frame{Kind: Push, RouteID: 2001, Body: []byte("1")},
			"00000009 01 0007d1 00000000 31"},
		{"idlen error", NameIdlen, FromServer,
			Frame{Kind: Error, RequestID: 7, Code: "client_rpc.busy", Message: "m"},
			"00000030 01 000000 00000007" + hexOf(`{"code":"client_rpc.busy","message":"m"}`)},
		{"idlen notice", NameIdlen, FromServer,
			Frame{Kind: Notice, Code: "session.kicked", Message: `a"<b>`},
			"00000034 01 000000 00000000" + hexOf(`{"code":"session.kicked","message":"a\"<b>"}`)},
		{"typelen heartbeat", NameTypelen, FromClient, Frame{Kind: Heartbeat},
			"0000000c 01 05 0000 0000000000000000"},
		{"typelen request", NameTypelen, FromClient,
			Frame{Kind: Request, RouteID: 0xffff, RequestID: 1 << 40, Body: []byte("x")},
			"0000000d 01 01 ffff 0000010000000000 78"},
		{"typelen notify", NameTypelen, FromClient,
			Frame{Kind: Notify, RouteID: 3001},
			"0000000c 01 07 0bb9 0000000000000000"},
		{"typelen error keeps route_id", NameTypelen, FromServer,
			Frame{Kind: Error, RouteID: 3001, RequestID: 5, Code: "a.b", Message: ""},
			"00000027 01 03 0bb9 0000000000000005" + hexOf(`{"code":"a.b","message":""}`)},
		{"typelen push", NameTypelen, FromServer,
			Frame{Kind: Push, RouteID: 2001, Body: []byte("{}")},
			"0000000e 01 04 07d1 0000000000000000 7b7d"},
		{"lenprefix heartbeat", NameLenprefix, FromClient, Frame{Kind: Heartbeat},
			"00000014" + hexOf(`{"type":"heartbeat"}`)},
		{"lenprefix response", NameLenprefix, FromServer,
			Frame{Kind: Response, Route: "move", RouteID: 3001, RequestID: 5, Body: []byte(`{"ok":true}`)},
			"00000057" + hexOf(`{"type":"response","route":"move","route_id":3001,"request_id":5,"payload":{"ok":true}}`)},
		{"delimiter request (SPEC example)", NameDelimiter, FromClient,
			Frame{Kind: Request, Route: "move", RouteID: 3001, RequestID: 5, Body: []byte(`{"x":1}`)},
			hexOf(`{"type":"request","route":"move","route_id":3001,"request_id":5,"payload":{"x":1}}` + "\n")},
		{"delimiter error", NameDelimiter, FromServer,
			Frame{Kind: Error, Route: "move", RouteID: 3001, RequestID: 5, Code: "client_rpc.busy", Message: "full"},
			hexOf(`{"type":"error","route":"move","route_id":3001,"request_id":5,"code":"client_rpc.busy","message":"full"}` + "\n")},
		{"delimiter notice", NameDelimiter, FromServer,
			Frame{Kind: Notice, Code: "gateway.draining", Message: "bye"},
			hexOf(`{"type":"notice","code":"gateway.draining","message":"bye"}` + "\n")},
		{"delimiter push without route name", NameDelimiter, FromServer,
			Frame{Kind: Push, RouteID: 2001, Body: []byte(`[1,2]`)},
			hexOf(`{"type":"push","route_id":2001,"payload":[1,2]}` + "\n")},
		{"delimiter heartbeat", NameDelimiter, FromServer, Frame{Kind: Heartbeat},
			hexOf(`{"type":"heartbeat"}` + "\n")},

		// Status frames (SPEC §3): route 0, request 0, a code that is not
		// a notice's and the field that goes with it; type 6 on typelen.
		{"idlen status resume_token", NameIdlen, FromServer,
			Frame{Kind: Notice, Code: "session.resume_token", Token: "t0k"},
			"00000035 01 000000 00000000" + hexOf(`{"code":"session.resume_token","token":"t0k"}`)},
		{"idlen status drain_started", NameIdlen, FromServer,
			Frame{Kind: Notice, Code: "gateway.drain_started", GraceMS: 10000},
			"00000039 01 000000 00000000" + hexOf(`{"code":"gateway.drain_started","grace_ms":10000}`)},
		{"idlen status resume_failed", NameIdlen, FromServer,
			Frame{Kind: Notice, Code: "session.resume_failed", Message: "expired"},
			"0000003c 01 000000 00000000" + hexOf(`{"code":"session.resume_failed","message":"expired"}`)},
		{"typelen status resumed", NameTypelen, FromServer,
			Frame{Kind: Notice, Code: "session.resumed", Token: "x"},
			"00000032 01 06 0000 0000000000000000" + hexOf(`{"code":"session.resumed","token":"x"}`)},
		{"lenprefix status drain_started", NameLenprefix, FromServer,
			Frame{Kind: Notice, Code: "gateway.drain_started", GraceMS: 500},
			"0000003f" + hexOf(`{"type":"notice","code":"gateway.drain_started","grace_ms":500}`)},
		{"delimiter status resume_token", NameDelimiter, FromServer,
			Frame{Kind: Notice, Code: "session.resume_token", Token: "abc"},
			hexOf(`{"type":"notice","code":"session.resume_token","token":"abc"}` + "\n")},

		// retry_after_ms (docs/protocol.md §6): last, on an error or a
		// notice that has one; absent otherwise, as every case above.
		{"idlen error retry_after_ms", NameIdlen, FromServer,
			Frame{Kind: Error, RequestID: 9, Code: "client_rpc.draining", Message: "d", RetryAfterMS: 1500},
			"0000004a 01 000000 00000009" + hexOf(`{"code":"client_rpc.draining","message":"d","retry_after_ms":1500}`)},
		{"idlen status drain_started retry_after_ms", NameIdlen, FromServer,
			Frame{Kind: Notice, Code: "gateway.drain_started", GraceMS: 5000, RetryAfterMS: 6000},
			"0000004e 01 000000 00000000" + hexOf(`{"code":"gateway.drain_started","grace_ms":5000,"retry_after_ms":6000}`)},
		{"typelen error retry_after_ms", NameTypelen, FromServer,
			Frame{Kind: Error, RouteID: 3001, RequestID: 5, Code: "client_rpc.rate_limited", Message: "m", RetryAfterMS: 100},
			"00000051 01 03 0bb9 0000000000000005" + hexOf(`{"code":"client_rpc.rate_limited","message":"m","retry_after_ms":100}`)},
		{"lenprefix error retry_after_ms", NameLenprefix, FromServer,
			Frame{Kind: Error, RouteID: 3001, RequestID: 5, Code: "client_rpc.busy", Message: "full", RetryAfterMS: 100},
			"0000006e" + hexOf(`{"type":"error","route_id":3001,"request_id":5,"code":"client_rpc.busy","message":"full","retry_after_ms":100}`)},

		// The client's resume frame (SPEC §3, §4): a heartbeat whose body
		// is {"resume":"<token>"}.
		{"idlen resume", NameIdlen, FromClient, Frame{Kind: Heartbeat, Token: "abc"},
			"00000018 01 000000 00000000" + hexOf(`{"resume":"abc"}`)},
		{"typelen resume", NameTypelen, FromClient, Frame{Kind: Heartbeat, Token: "abc"},
			"0000001c 01 05 0000 0000000000000000" + hexOf(`{"resume":"abc"}`)},
		{"lenprefix resume", NameLenprefix, FromClient, Frame{Kind: Heartbeat, Token: "abc"},
			"0000002f" + hexOf(`{"type":"heartbeat","payload":{"resume":"abc"}}`)},
		{"delimiter resume", NameDelimiter, FromClient, Frame{Kind: Heartbeat, Token: "abc"},
			hexOf(`{"type":"heartbeat","payload":{"resume":"abc"}}` + "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := hx(t, tt.wire)
			c := mustNew(t, tt.env, tt.side, 1<<16)
			got, err := c.AppendFrame(nil, &tt.frame)
			if err != nil {
				t.Fatalf("AppendFrame: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendFrame\n got % x\nwant % x", got, want)
			}
			f, err := Read(c, bufio.NewReader(bytes.NewReader(want)))
			if err != nil {
				t.Fatalf("ReadFrame: %v", err)
			}
			if !sameFrame(f, tt.frame) {
				t.Fatalf("ReadFrame = %+v, want %+v", f, tt.frame)
			}
			if n := c.FrameSize(&tt.frame); n != len(want)-streamFraming(tt.env) {
				t.Fatalf("FrameSize = %d, want %d", n, len(want)-streamFraming(tt.env))
			}
		})
	}
}

// streamFraming is what an envelope adds around a frame on a stream: the
// u32 length, or the newline.
func streamFraming(env string) int {
	if env == NameDelimiter {
		return 1
	}
	return LengthSize
}

// TestBadResume: a route-0 body from a client that is not exactly a resume
// is bad_system_frame (bad_wrapper on the legacy envelopes).
func TestBadResume(t *testing.T) {
	for _, tc := range []struct {
		env, wire string
		want      Reason
	}{
		{NameIdlen, "0000000b 01 000000 00000000" + hexOf(`{"r"}`), ReasonBadSystemFrame},
		{NameIdlen, "00000012 01 000000 00000000" + hexOf(`{"resume":1}`), ReasonBadSystemFrame},
		{NameIdlen, "00000012 01 000000 00000000" + hexOf(`{"resume":""}`), ReasonBadSystemFrame},
		{NameIdlen, "0000001c 01 000000 00000000" + hexOf(`{"resume":"a","x":2}`), ReasonBadSystemFrame},
		{NameTypelen, "00000016 01 05 0000 0000000000000000" + hexOf(`{"resume":1}`), ReasonBadSystemFrame},
		{NameDelimiter, hexOf(`{"type":"heartbeat","payload":{"resume":7}}` + "\n"), ReasonBadWrapper},
	} {
		c := mustNew(t, tc.env, FromClient, 1<<16)
		_, err := Read(c, bufio.NewReader(bytes.NewReader(hx(t, tc.wire))))
		if r, _ := ReasonOf(err); r != tc.want {
			t.Errorf("%s % x: %v, want %s", tc.env, hx(t, tc.wire), err, tc.want)
		}
	}
	// A token longer than 128 characters is no token.
	long := `{"resume":"` + strings.Repeat("a", 129) + `"}`
	c := mustNew(t, NameIdlen, FromClient, 1<<16)
	var b []byte
	b = append(b, 0, 0, 0, byte(8+len(long)), 1, 0, 0, 0, 0, 0, 0, 0)
	if _, err := Read(c, bufio.NewReader(bytes.NewReader(append(b, long...)))); err == nil {
		t.Error("a 129-character token accepted")
	}
}

// hexOf returns s's bytes in hex, for golden bodies written as text.
func hexOf(s string) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, digits[s[i]>>4], digits[s[i]&0xf])
	}
	return string(out)
}
