package luavm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/ingress"
)

// TestClientRouteIsTheGatewaysName: a client's route is the name the
// gateway gave the frame, also when this VM's descriptor names the route
// otherwise (the two may differ while a reload spreads); route_id is the
// frame's either way.
func TestClientRouteIsTheGatewaysName(t *testing.T) {
	script := filepath.Join(t.TempDir(), "a.lua")
	src := `local M = {}
function M.go(ctx, client, req) return { client.route, client.route_id, client.request_id } end
return M`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	vm, err := New(Spec{Service: "a", Script: script, Routes: []descriptor.Route{
		{ID: 1, Name: "move", Binding: "go", Direction: config.C2S, Owner: "a", Action: config.DecodeLocal}}})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	h := &answers{}
	vm.Attach(h)
	for _, tc := range []struct{ route, want string }{
		{"move", `["move",1,9]`},
		{"walk", `["walk",1,9]`},
		{"", `["",1,9]`},
	} {
		h.resp = nil
		vm.HandleIngress(&ingress.ClientIngress{Client: ingress.ClientContext{Route: tc.route, RouteID: 1, RequestID: 9},
			Body: []byte("{}"), Codec: "json"})
		if len(h.resp) != 1 || h.resp[0].Err != nil || string(h.resp[0].Body) != tc.want {
			t.Fatalf("route %q: answers %+v, want %s", tc.route, h.resp, tc.want)
		}
	}
}
