package acceptance

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// marksOf asks the service what mark notifies it recorded.
func marksOf(t testing.TB, w *transcript, rid uint64) []any {
	t.Helper()
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rMarks, RequestID: rid})
	f := w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rMarks, RequestID: rid})
	var got struct{ Marks []any }
	if err := json.Unmarshal(f.Body, &got); err != nil {
		t.Fatalf("marks %s: %v", f.Body, err)
	}
	return got.Marks
}

func hasMark(marks []any, v string) bool {
	for _, m := range marks {
		if mm, ok := m.(map[string]any); ok && mm["v"] == v {
			return true
		}
	}
	return false
}

// TestNotifyNeverAnswered: on every envelope a notify runs its handler
// (the service records it) and gets no frame back: the next frame the
// client reads answers the request sent after it.
func TestNotifyNeverAnswered(t *testing.T) {
	e := startEdge(t, "")
	for _, env := range envelopes {
		t.Run(env, func(t *testing.T) {
			w := e.raw(t, env)
			v := "n-" + env
			notify := envelope.Frame{Kind: envelope.Notify, RouteID: rMark, Body: []byte(fmt.Sprintf(`{"v":%q}`, v))}
			switch env {
			case "typelen":
				// A typelen notify's request_id is ignored: still no answer.
				b, err := w.Codec.AppendFrame(nil, &notify)
				if err != nil {
					t.Fatal(err)
				}
				b[15] = 77 // the low byte of the u64 request_id
				w.Write(b)
			case "delimiter":
				// A wrapper without type and request_id is a notify.
				w.Write([]byte(fmt.Sprintf(`{"route_id":%d,"payload":{"v":%q}}`+"\n", rMark, v)))
			default:
				w.Send(notify)
			}
			e.Logs.WaitFor(t, "mark", "v", fmt.Sprintf(`{"v":%q}`, v))
			if marks := marksOf(t, w, 1); !hasMark(marks, v) {
				t.Fatalf("marks %v lack %q", marks, v)
			}
			w.ExpectNothing(100 * time.Millisecond)
		})
	}
}

// TestLegacyRouteByName: on the legacy envelopes a request may name its
// route by "route" alone and reaches that route's handler; an unknown name
// is route_not_found (no answer, counted); a route_id, when given, wins.
func TestLegacyRouteByName(t *testing.T) {
	e := startEdge(t, "")
	for _, env := range []string{"lenprefix", "delimiter"} {
		t.Run(env, func(t *testing.T) {
			w := e.raw(t, env)
			w.Send(envelope.Frame{Kind: envelope.Request, Route: "whoami", RequestID: 3, Body: []byte(`{}`)})
			f := w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rWhoami, RequestID: 3})
			if f.Route != "whoami" {
				t.Fatalf("response route %q", f.Route)
			}
			var who struct {
				Route   string `json:"route"`
				RouteID int    `json:"route_id"`
			}
			if err := json.Unmarshal(f.Body, &who); err != nil || who.Route != "whoami" || who.RouteID != rWhoami {
				t.Fatalf("handler saw %s (%v)", f.Body, err)
			}

			before := e.Dropped("route_not_found")
			w.Send(envelope.Frame{Kind: envelope.Request, Route: "no_such_route", RequestID: 4, Body: []byte(`{}`)})
			w.Send(envelope.Frame{Kind: envelope.Notify, Route: "no_such_route", Body: []byte(`{}`)})
			wiretest.Eventually(t, "route_not_found counted twice", func() bool { return e.Dropped("route_not_found") == before+2 })
			w.ExpectNothing(100 * time.Millisecond)

			// route_id wins over route.
			w.Send(envelope.Frame{Kind: envelope.Request, Route: "echo", RouteID: rWhoami, RequestID: 5, Body: []byte(`{}`)})
			w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rWhoami, RequestID: 5})

			// A notify by name runs its handler.
			w.Send(envelope.Frame{Kind: envelope.Notify, Route: "mark", Body: []byte(`{"v":"by-name-` + env + `"}`)})
			if marks := marksOf(t, w, 6); !hasMark(marks, "by-name-"+env) {
				t.Fatalf("marks %v", marks)
			}
		})
	}
}

// TestBodyTolerance: with a header-route envelope and the json codec, a
// body that is exactly {payload, route and/or route_id} reaches the
// handler as its payload; any other shape, and any body on a legacy
// envelope, reaches it as it is.
func TestBodyTolerance(t *testing.T) {
	e := startEdge(t, "")
	cases := []struct {
		body, header, legacy string
	}{
		{`{"route":"x","payload":{"a":1}}`, `{"a":1}`, ""},
		{`{"route_id":5,"payload":[1,2]}`, `[1,2]`, ""},
		{`{"payload":"s","route":"echo","route_id":102}`, `"s"`, ""},
		{`{"route":"x","payload":{"a":1},"extra":true}`, "", ""},
		{`{"payload":{"a":1}}`, "", ""},
		{`{"route":"x"}`, "", ""},
		{`{"route":"x","payload":{"a":1},"route":"y"}`, "", "skip"},
	}
	for _, env := range envelopes {
		t.Run(env, func(t *testing.T) {
			c := e.client(t, env)
			legacy := env == "lenprefix" || env == "delimiter"
			for _, tc := range cases {
				want := tc.body
				if !legacy && tc.header != "" {
					want = tc.header
				}
				if legacy && tc.legacy == "skip" {
					continue // a duplicate key is not a payload a wrapper can carry as is
				}
				var got json.RawMessage
				call(t, c, rEcho, []byte(tc.body), &got)
				if !sameJSON(t, got, []byte(want)) {
					t.Errorf("body %s reached the handler as %s, want %s", tc.body, got, want)
				}
			}
		})
	}
}

// sameJSON compares two JSON documents by value.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestLegacyEdgeErrorNamesRoute: an error frame the gateway itself makes
// (here client_rpc.busy) carries, on a legacy envelope, the route's name
// and id whichever of them the request used, as a handler's error does.
func TestLegacyEdgeErrorNamesRoute(t *testing.T) {
	e := startEdge(t, "  max_inflight: 1")
	for _, env := range []string{"lenprefix", "delimiter"} {
		t.Run(env, func(t *testing.T) {
			w := e.raw(t, env)
			w.Send(
				envelope.Frame{Kind: envelope.Request, Route: "sleep", RequestID: 1, Body: []byte(`{"ms":200}`)},
				envelope.Frame{Kind: envelope.Request, Route: "echo", RequestID: 2, Body: []byte(`2`)},
				envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 3, Body: []byte(`3`)},
			)
			for _, id := range []uint64{2, 3} {
				f := w.Expect(envelope.Frame{Kind: envelope.Error, RequestID: id, Code: "client_rpc.busy"})
				if f.Route != "echo" || f.RouteID != rEcho {
					t.Errorf("request %d: error names route %q id %d, want echo %d", id, f.Route, f.RouteID, rEcho)
				}
			}
			f := w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
			if f.Route != "sleep" || f.RouteID != rSleep {
				t.Errorf("response names route %q id %d", f.Route, f.RouteID)
			}
		})
	}
}
