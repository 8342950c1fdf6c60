package acceptance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// Routes of the deadline services (testdata/deadline.lua).
const (
	dLeft      = 501 // long: the ms left of the run
	dLeftCall  = 502 // long: the ms left of a shield.call it makes
	dLeftShort = 511 // short: the ms left of the run
)

// deadlineServer runs testdata/deadline.lua as long (handler_timeout 60s,
// the entry of one listener per envelope and of ws) and short (2s, the
// entry of listener short), and callee (60s) for shield.call. top is
// more top-level YAML (the tracing tests' tracing block).
func deadlineServer(t *testing.T, top string) *wiretest.Server {
	t.Helper()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var listeners strings.Builder
	for _, e := range envelopes {
		fmt.Fprintf(&listeners, "    - {name: %s, address: \"127.0.0.1:0\", entry_service: long, protocol: {envelope: %s}}\n", e, e)
	}
	listeners.WriteString("    - {name: ws, address: \"127.0.0.1:0\", transport: ws, entry_service: long}\n")
	listeners.WriteString("    - {name: short, address: \"127.0.0.1:0\", entry_service: short}\n")
	return wiretest.Start(t, "deadline.yaml", fmt.Sprintf(`node: {name: gw-deadline}
network:
  listeners:
%s
%[7]s
actors:
  - name: long
    script: %[2]s
    handler_timeout: 60s
    rpc:
      routes:
        - {id: %[4]d, name: left, binding: left, requires_auth: false}
        - {id: %[5]d, name: left_call, binding: left_call, requires_auth: false}
  - name: short
    script: %[2]s
    handler_timeout: 2s
    rpc: {routes: [{id: %[6]d, name: left_short, binding: left, requires_auth: false}]}
  - name: callee
    script: %[3]s
    handler_timeout: 60s
`, listeners.String(), abs("testdata/deadline.lua"), abs("testdata/deadline_callee.lua"), dLeft, dLeftCall, dLeftShort, top), nil)
}

// TestDeclaredDeadlines: a request's declared deadline_ms (docs/protocol.md
// "Deadlines") is the handler's budget when shorter than handler_timeout,
// clamped to [1 s, 60 s] at each end, on every envelope and on ws, and it
// bounds a shield.call the handler makes; a client that declares nothing
// gets handler_timeout.
func TestDeclaredDeadlines(t *testing.T) {
	srv := deadlineServer(t, "")
	left := func(t *testing.T, listener string, route uint32, declare bool, timeout time.Duration) float64 {
		t.Helper()
		o := client.Options{Envelope: listener, DeclareDeadlines: declare}
		switch listener {
		case "ws":
			o.Envelope, o.Transport = envelope.NameIdlen, "ws"
		case "short":
			o.Envelope = envelope.NameIdlen
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		c, err := client.Dial(ctx, srv.Addr(listener), o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		callCtx, cancelCall := context.WithTimeout(context.Background(), timeout)
		defer cancelCall()
		var ms float64
		if err := c.Call(callCtx, route, nil, &ms); err != nil {
			t.Fatalf("%s route %d: %v", listener, route, err)
		}
		return ms
	}
	for _, l := range append(append([]string{}, envelopes...), "ws") {
		t.Run(l, func(t *testing.T) {
			for _, c := range []struct {
				name     string
				route    uint32
				declare  bool
				timeout  time.Duration
				min, max float64 // the ms the handler may have left
			}{
				{"none declared: handler_timeout", dLeft, false, 3 * time.Second, 55000, 60000},
				{"10 s declared", dLeft, true, 10 * time.Second, 8000, 10000},
				{"below 1 s is 1 s", dLeft, true, 300 * time.Millisecond, 300, 1000},
				{"above 60 s is 60 s", dLeft, true, 90 * time.Second, 55000, 60000},
				{"a shield.call runs within it", dLeftCall, true, 10 * time.Second, 8000, 10000},
			} {
				if ms := left(t, l, c.route, c.declare, c.timeout); ms < c.min || ms > c.max {
					t.Errorf("%s: %v ms left, want %v..%v", c.name, ms, c.min, c.max)
				}
			}
		})
	}
	// A declared budget never lengthens handler_timeout.
	if ms := left(t, "short", dLeftShort, true, 10*time.Second); ms > 2000 || ms < 1000 {
		t.Errorf("10 s declared on a 2 s handler_timeout: %v ms left, want 1000..2000", ms)
	}
}

// TestDeadlineFrameMisuse: a Deadline frame must be followed at once by
// the request it names; anything else closes the connection as a
// protocol error (bad_system_frame), and a well-paired one is answered.
func TestDeadlineFrameMisuse(t *testing.T) {
	srv := deadlineServer(t, "")
	deadline := envelope.Frame{Kind: envelope.Deadline, RequestID: 7, DeadlineMS: 2000}
	for _, c := range []struct {
		name  string
		then  []envelope.Frame
		close bool
	}{
		{"followed by its request", []envelope.Frame{req(dLeft, 7, nil)}, false},
		{"followed by another request", []envelope.Frame{req(dLeft, 8, nil)}, true},
		{"followed by a notify", []envelope.Frame{notify(dLeft, nil)}, true},
		{"followed by a heartbeat", []envelope.Frame{{Kind: envelope.Heartbeat}, req(dLeft, 7, nil)}, true},
		{"followed by another deadline", []envelope.Frame{deadline, req(dLeft, 7, nil)}, true},
	} {
		for _, env := range []string{envelope.NameIdlen, envelope.NameTypelen} {
			t.Run(c.name+"/"+env, func(t *testing.T) {
				before := srv.ProtocolErrors("bad_system_frame")
				w := wiretest.Dial(t, env, srv.Addr(env), env)
				w.Send(append([]envelope.Frame{deadline}, c.then...)...)
				if !c.close {
					w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: dLeft, RequestID: 7})
					return
				}
				w.ExpectClosed()
				wiretest.Eventually(t, "bad_system_frame counted", func() bool {
					return srv.ProtocolErrors("bad_system_frame") == before+1
				})
			})
		}
	}
}
