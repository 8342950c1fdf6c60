package luavm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// TestLazyDecodeHandlers: lazy_decode (on by default) marks a handler that
// cannot read req (fewer than three parameters, no ...), and only when the
// route's lazy_decode is on; such a handler still runs and answers, and a
// decode that can fail is still run for it.
func TestLazyDecodeHandlers(t *testing.T) {
	script := filepath.Join(t.TempDir(), "a.lua")
	src := `local M = {}
function M.two(ctx, client) return { ok = true } end
function M.three(ctx, client, req) return { ok = true } end
function M.vararg(ctx, ...) return { ok = true } end
function M:method(ctx, client) return { ok = true } end
M.go = print
return M`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	route := func(id uint32, binding string, lazy bool) descriptor.Route {
		return descriptor.Route{ID: id, Binding: binding, Direction: config.C2S, Owner: "a", Action: config.DecodeLocal, LazyDecode: lazy}
	}
	vm, err := New(Spec{Service: "a", Script: script, Routes: []descriptor.Route{
		route(1, "two", true), route(2, "three", true), route(3, "vararg", true),
		route(4, "method", true), route(5, "go", true), route(6, "two", false)}})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	for id, want := range map[uint32]bool{1: true, 2: false, 3: false, 4: false, 5: false, 6: false} {
		if got := vm.handlers[id].lazy; got != want {
			t.Errorf("route %d (%s, lazy_decode %v): lazy = %v, want %v",
				id, vm.handlers[id].route.Binding, vm.handlers[id].route.LazyDecode, got, want)
		}
	}

	h := &answers{}
	vm.Attach(h)
	for _, c := range []struct {
		name, codec, want string
	}{
		{"a json body, not decoded", "json", `{"ok":true}`},
		{"a body no codec decodes still fails", "protobuf-nosuch", "client_rpc.decode_failed"},
	} {
		h.resp = h.resp[:0]
		vm.HandleIngress(&ingress.ClientIngress{Client: ingress.ClientContext{
			Ref: egress.ClientRef{SessionID: 1, Epoch: 1, Gateway: "gw"}, RouteID: 1, RequestID: 1},
			Body: []byte(`{"x":1}`), Codec: c.codec})
		if len(h.resp) != 1 {
			t.Fatalf("%s: %d answers", c.name, len(h.resp))
		}
		got := string(h.resp[0].Body)
		if h.resp[0].Err != nil {
			got = string(h.resp[0].Err.Code)
		}
		if got != c.want {
			t.Errorf("%s: answer %q, want %q", c.name, got, c.want)
		}
	}
}
