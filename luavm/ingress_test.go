package luavm_test

import (
	"testing"

	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
)

// TestIngressDecoding checks how a ClientIngress body reaches the handler
// and how the return value becomes the response body (SPEC §2's
// request_codec and action, §8's empty response).
func TestIngressDecoding(t *testing.T) {
	const script = `local M = {}
function M.echo(ctx, client, req) return req end
function M.kind(ctx, client, req) return { type = type(req), v = req } end
function M.nothing(ctx, client, req) end
function M.nothing_nil(ctx, client, req) return nil end
function M.raw(ctx, client, req) return "raw:" .. req end
function M.raw_table(ctx, client, req) return { req } end
function M.fail(ctx, client, req) error("notify boom") end
return M`
	a := luatest.ActorYAML("a", "", `
      - {id: 1, binding: echo}
      - {id: 2, binding: kind}
      - {id: 3, binding: kind, request_codec: msgpack}
      - {id: 4, binding: raw, action: forward_raw}
      - {id: 5, binding: raw_table, action: forward_raw}
      - {id: 6, binding: nothing}
      - {id: 7, binding: nothing_nil}
      - {id: 8, binding: kind, request_codec: json}
      - {id: 9, binding: fail}
      - {id: 10, binding: raw}`)
	w := startWorld(t, map[string]string{"actors.yaml": luatest.ConfigYAML("", a), "a.lua": script})

	for _, c := range []struct {
		name   string
		route  uint32
		codec  string
		unwrap bool
		body   string
		want   string
	}{
		{"a JSON body", 1, "json", false, `{"a":[1,{"b":null}],"c":"d"}`, `{"a":[1,{"b":null}],"c":"d"}`},
		{"the codec name may be empty", 1, "", false, `[1,2]`, `[1,2]`},
		{"a JSON string", 2, "json", false, `"s"`, `{"type":"string","v":"s"}`},
		{"a non-JSON body is a string", 2, "json", false, `not json{`, `{"type":"string","v":"not json{"}`},
		{"an explicit json request_codec", 8, "json", false, `not json`, `{"type":"string","v":"not json"}`},
		{"an empty body is nil", 2, "json", false, ``, `{"type":"nil"}`},
		{"another request_codec is raw", 3, "json", false, `{"a":1}`, `{"type":"string","v":"{\"a\":1}"}`},
		{"forward_raw in and out", 4, "json", false, `{"a":1}`, `raw:{"a":1}`},
		{"forward_raw returning a table is encoded with the listener's codec", 5, "json", false, `x`, `["x"]`},
		{"forward_raw returning a table on a raw listener", 5, "raw", false, `x`, "client_rpc.handler_failed"},
		{"no return value is an empty body", 6, "json", false, `{}`, ``},
		{"nil is an empty body", 7, "json", false, `{}`, ``},
		{"a raw listener passes bytes both ways", 10, "raw", false, "\x00\xff", "raw:\x00\xff"},
		{"a raw listener's table response fails", 2, "raw", false, "x", "client_rpc.handler_failed"},
		{"the legacy wrapper is unwrapped", 1, "json", true, `{"route":"move","payload":{"x":1}}`, `{"x":1}`},
		{"the legacy wrapper is kept without Unwrap", 1, "json", false, `{"route":"move","payload":{"x":1}}`, `{"payload":{"x":1},"route":"move"}`},
		{"a body that only looks like a wrapper is kept", 1, "json", true, `{"route":"move","payload":{"x":1},"extra":1}`, `{"extra":1,"payload":{"x":1},"route":"move"}`},
		{"an unknown codec", 1, "protobuf-nosuch", false, `x`, "client_rpc.decode_failed"},
		{"a route the VM does not have", 99, "json", false, `{}`, "client_rpc.handler_missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := w.Next.Add(1)
			w.Deliver(t, "a", &ingress.ClientIngress{Client: luatest.Client(id, c.route), Body: []byte(c.body), Codec: c.codec, Unwrap: c.unwrap})
			r := w.Await(t, id)
			if r.Notify || r.RouteID != c.route || r.SessionID != 7 {
				t.Fatalf("response %+v", r)
			}
			if luatest.CodeLike.MatchString(c.want) {
				luatest.Expect(t, r, c.want, "")
				return
			}
			if r.Err != nil || string(r.Body) != c.want {
				t.Fatalf("got %q %v, want %q", r.Body, r.Err, c.want)
			}
		})
	}

	// A notify gets no answer, only the accounting response, success or
	// not.
	for _, route := range []uint32{1, 9} {
		w.Deliver(t, "a", &ingress.ClientIngress{Client: luatest.Client(0, route), Body: []byte(`{"n":1}`), Codec: "json"})
	}
	var notifies int
	luatest.Wait(t, 5e9, "two notify accountings", func() bool {
		notifies = len(w.Gateway.Responses(0))
		return notifies >= 2
	})
	for _, r := range w.Gateway.Responses(0) {
		if !r.Notify || len(r.Body) != 0 {
			t.Fatalf("notify response %+v", r)
		}
	}
	if got := w.Logs.Records("notify failed"); len(got) != 1 || got[0]["code"] != "client_rpc.handler_failed" {
		t.Fatalf("notify failure log: %v", got)
	}
}
