package service_test

import (
	"fmt"
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

func TestCallChainAToBToA(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			luatest.ActorYAML("a", "", "\n      - {id: 1, name: go, binding: go}"),
			luatest.ActorYAML("b", "", "")),
		"a.lua": `local M = {}
function M.go(ctx, client, req) return { v = shield.call("b", "twice", req.n) } end
function M.inc(ctx, n) return n + 1 end
return M`,
		"b.lua": `local M = {}
function M.twice(ctx, n) return 2 * shield.call("a", "inc", n) end
return M`,
	})
	luatest.Expect(t, w.Ask(t, "a", 1, `{"n":20}`), `{"v":42}`, "")
}

func TestThousandCallsInFlight(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			luatest.ActorYAML("a", "mailbox: 4096", "\n      - {id: 1, name: go, binding: go}"),
			luatest.ActorYAML("b", "mailbox: 4096", "")),
		"a.lua": `local M = {}
function M.go(ctx, client, req) return { v = shield.call("b", "slow", req.n) } end
return M`,
		"b.lua": `local M = {}
function M.slow(ctx, n) shield.sleep(50) return n end
return M`,
	})
	ids := make([]uint64, 0, 1000)
	for i := 1; i <= 1000; i++ {
		ids = append(ids, w.Send(t, "a", 1, fmt.Sprintf(`{"n":%d}`, i)))
	}
	for i, id := range ids {
		luatest.Expect(t, w.Await(t, id), fmt.Sprintf(`{"v":%d}`, i+1), "")
	}
}
