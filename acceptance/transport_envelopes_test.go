package acceptance

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// wireMarks asks the edge service, over any transport, what mark notifies
// it recorded.
func wireMarks(t testing.TB, w frameWire, rid uint64) []any {
	t.Helper()
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rMarks, RequestID: rid})
	f := w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rMarks, RequestID: rid})
	var got struct{ Marks []any }
	if err := json.Unmarshal(f.Body, &got); err != nil {
		t.Fatalf("marks %s: %v", f.Body, err)
	}
	return got.Marks
}

// TestTransportEnvelopes runs the envelope transcript over every transport
// and envelope: the heartbeat is echoed; a notify runs its handler and
// gets no answer; a request gets its one response with the body
// unchanged; a frame the edge drops gets nothing; an error frame carries
// its code.
func TestTransportEnvelopes(t *testing.T) {
	s := startTransportEdge(t, "", everyTransport()...)
	for _, l := range everyTransport() {
		t.Run(l.name(), func(t *testing.T) {
			w := s.wire(t, l.name())
			w.Send(envelope.Frame{Kind: envelope.Heartbeat})
			w.Expect(envelope.Frame{Kind: envelope.Heartbeat})

			v := "n-" + l.name()
			w.Send(envelope.Frame{Kind: envelope.Notify, RouteID: rMark, Body: []byte(fmt.Sprintf(`{"v":%q}`, v))})
			s.Logs.WaitFor(t, "mark", "v", fmt.Sprintf(`{"v":%q}`, v))
			if marks := wireMarks(t, w, 1); !hasMark(marks, v) {
				t.Fatalf("marks %v lack %q", marks, v)
			}

			w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 2, Body: []byte(`{"a":[1,2]}`)})
			f := w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rEcho, RequestID: 2})
			if !sameJSON(t, f.Body, []byte(`{"a":[1,2]}`)) {
				t.Fatalf("echo %s", f.Body)
			}

			before := s.Dropped("route_not_found")
			w.Send(envelope.Frame{Kind: envelope.Request, RouteID: 4242, RequestID: 3, Body: []byte(`{}`)})
			wiretest.Eventually(t, "route_not_found counted", func() bool { return s.Dropped("route_not_found") == before+1 })
			w.ExpectNothing(100 * time.Millisecond)

			// A route that needs a login, after one: the session is the
			// same whatever the transport.
			w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rLogin, RequestID: 4, Body: []byte(`{"user":"u-` + l.name() + `"}`)})
			w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rLogin, RequestID: 4})
			w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rJoin, RequestID: 5, Body: []byte(`{}`)})
			w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rJoin, RequestID: 5})
		})
	}
}

// TestTransportBodies: the Go client over every transport and envelope
// gets bodies back as the handler saw them, with the header envelopes'
// tolerance of a wrapped payload.
func TestTransportBodies(t *testing.T) {
	s := startTransportEdge(t, "", everyTransport()...)
	for _, l := range everyTransport() {
		t.Run(l.name(), func(t *testing.T) {
			c := s.dial(t, l.name())
			legacy := l.envelope == "lenprefix" || l.envelope == "delimiter"
			for _, tc := range []struct{ body, header string }{
				{`{"route":"x","payload":{"a":1}}`, `{"a":1}`},
				{`[1,"two",{"three":3}]`, ""},
				{`"a string"`, ""},
			} {
				want := tc.body
				if !legacy && tc.header != "" {
					want = tc.header
				}
				var got json.RawMessage
				call(t, c, rEcho, []byte(tc.body), &got)
				if !sameJSON(t, got, []byte(want)) {
					t.Errorf("body %s came back as %s, want %s", tc.body, got, want)
				}
			}
		})
	}
}

// TestGameOverEveryTransport plays the example game over each transport
// and envelope: two players log in, join a room, and one sees the other
// move.
func TestGameOverEveryTransport(t *testing.T) {
	s := startTransportGame(t, everyTransport()...)
	for _, l := range everyTransport() {
		t.Run(l.name(), func(t *testing.T) {
			alice, bob := s.dial(t, l.name()), s.dial(t, l.name())
			var seen pushes
			bob.OnPush(routePosition, seen.add)
			login(t, alice, "alice-"+l.name())
			login(t, bob, "bob-"+l.name())
			room := map[string]string{"room": "lobby-" + l.name()}
			call(t, alice, routeJoinRoom, room, nil)
			var joined struct{ Members int }
			call(t, bob, routeJoinRoom, room, &joined)
			if joined.Members != 2 {
				t.Fatalf("members = %d, want 2", joined.Members)
			}
			call(t, alice, routeMove, map[string]int{"x": 3, "y": 4}, nil)
			want := fmt.Sprintf(`{"player_id":"alice-%s","x":3,"y":4}`, l.name())
			wiretest.Eventually(t, "bob sees alice move", func() bool { return seen.has(want) })
		})
	}
}
