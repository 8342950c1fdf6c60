package luavm_test

import (
	"testing"

	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
)

// TestClientBoundFrom checks client_bound's third argument (docs/rooms.md
// §5.1): nil after an ordinary bind, {room = id, reason = why} after a
// room bound its member back; a hook with two parameters still runs.
func TestClientBoundFrom(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "", ""), luatest.ActorYAML("b", "", "")),
		"a.lua": `local M = {}
function M.client_bound(ctx, client, from)
  shield.log.info("bound", "epoch", client.epoch, "from", shield.json.encode(from == nil and "nil" or from))
end
return M`,
		"b.lua": `local M = {}
function M.client_bound(ctx, client) shield.log.info("old hook", "epoch", client.epoch) end
return M`,
	})
	ref := egress.ClientRef{SessionID: 9, Epoch: 2, PlayerID: "p9", Gateway: "gw-test"}
	w.Runtime.Control(luatest.ActorID("a"), &ingress.Bound{Ref: ref})
	ref.Epoch = 4
	w.Runtime.Control(luatest.ActorID("a"), &ingress.Bound{Ref: ref, FromRoom: "arena/9f3c2a1b4d5e6f70@gw-test", Left: "timeout"})
	w.Runtime.Control(luatest.ActorID("b"), &ingress.Bound{Ref: ref, FromRoom: "arena/9f3c2a1b4d5e6f70@gw-test", Left: "left"})

	got := w.Logs.WaitRecords(t, "bound", 2)
	if got[0]["from"] != `"nil"` || got[1]["from"] != `{"reason":"timeout","room":"arena/9f3c2a1b4d5e6f70@gw-test"}` {
		t.Fatalf("bound hooks: %v", got)
	}
	if old := w.Logs.WaitRecords(t, "old hook", 1); len(old) != 1 {
		t.Fatalf("old hook: %v", old)
	}
}
