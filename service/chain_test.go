package service

import (
	"fmt"
	"testing"

	"github.com/shieldrpc/shield/egress"
)

func TestCallChainAToBToA(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": yaml(
			`  - name: a
    script: a.lua
    rpc: {routes: [{id: 1, name: go, binding: go, requires_auth: false}]}`,
			`  - name: b
    script: b.lua`),
		"a.lua": `local M = {}
function M.go(ctx, client, req) return { v = shield.call("b", "twice", req.n) } end
function M.inc(ctx, n) return n + 1 end
return M`,
		"b.lua": `local M = {}
function M.twice(ctx, n) return 2 * shield.call("a", "inc", n) end
return M`,
	})
	w.request(t, egress.ActorID{Service: "a"}, 1, 1, `{"n":20}`)
	got := w.gw.waitResponses(t, 1)
	if got[0].Err != nil || string(got[0].Body) != `{"v":42}` {
		t.Fatalf("got %s %v", got[0].Body, got[0].Err)
	}
}

func TestThousandCallsInFlight(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": yaml(
			`  - name: a
    script: a.lua
    mailbox: 4096
    rpc: {routes: [{id: 1, name: go, binding: go, requires_auth: false}]}`,
			`  - name: b
    script: b.lua
    mailbox: 4096`),
		"a.lua": `local M = {}
function M.go(ctx, client, req) return { v = shield.call("b", "slow", req.n) } end
return M`,
		"b.lua": `local M = {}
function M.slow(ctx, n) shield.sleep(50) return n end
return M`,
	})
	for i := 1; i <= 1000; i++ {
		w.request(t, egress.ActorID{Service: "a"}, 1, uint64(i), fmt.Sprintf(`{"n":%d}`, i))
	}
	got := w.gw.waitResponses(t, 1000)
	seen := map[uint64]bool{}
	for _, r := range got {
		if r.Err != nil || string(r.Body) != fmt.Sprintf(`{"v":%d}`, r.RequestID) {
			t.Fatalf("request %d: %s %v", r.RequestID, r.Body, r.Err)
		}
		seen[r.RequestID] = true
	}
	if len(seen) != 1000 {
		t.Fatalf("%d distinct answers", len(seen))
	}
}
