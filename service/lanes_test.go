package service_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/service"
)

const laneScript = `local M = {}
function M.spin(ctx, client, req)
  local t0 = os.clock()
  while os.clock() - t0 < req.s do end
  return "spun"
end
function M.note(ctx, client, req) shield.log.info("lane", "what", "business", "n", req.n) return req.n end
function M.client_disconnected(ctx, client, reason) shield.log.info("lane", "what", "control", "n", client.session_id) end
return M`

// TestLanes checks the two lanes: the business lane is bounded and fails
// fast with busy, its depth is visible, and the control lane is drained
// first.
func TestLanes(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "mailbox: 3", "\n      - {id: 1, binding: spin}\n      - {id: 2, binding: note}")),
		"a.lua":       laneScript,
	})
	spin := w.Send(t, "a", 1, `{"s":0.3}`)
	// luatest.Wait for the spin to leave the lane, then fill it.
	luatest.Wait(t, time.Second, "the spin to start", func() bool { return w.Runtime.MailboxDepth("a") == 0 })
	var queued []uint64
	for i := 1; i <= 3; i++ {
		queued = append(queued, w.Send(t, "a", 2, fmt.Sprintf(`{"n":%d}`, i)))
	}
	if d := w.Runtime.MailboxDepth("a"); d != 3 {
		t.Fatalf("depth %d, want 3", d)
	}
	in := &ingress.ClientIngress{Client: luatest.Client(9, 2), Body: []byte(`{"n":9}`), Codec: "json"}
	start := time.Now()
	err := w.Runtime.Deliver(egress.ActorID{Service: "a"}, in)
	if err == nil || err.Code != codes.Busy || time.Since(start) > patience*50*time.Millisecond {
		t.Fatalf("deliver to a full lane: %v after %v", err, time.Since(start))
	}
	// Control messages are never refused, and run before the business
	// lane once the actor is free.
	for i := 0; i < 50; i++ {
		w.Runtime.Control(egress.ActorID{Service: "a"}, &ingress.Disconnected{Ref: egress.ClientRef{SessionID: uint64(100 + i), Gateway: "gw-test"}, Reason: "closed"})
	}
	luatest.Expect(t, w.Await(t, spin), `"spun"`, "")
	for i, id := range queued {
		luatest.Expect(t, w.Await(t, id), fmt.Sprint(i+1), "")
	}
	recs := w.Logs.WaitRecords(t, "lane", 53)
	for i, r := range recs {
		want := "control"
		if i >= 50 {
			want = "business"
		}
		if r["what"] != want {
			t.Fatalf("record %d is %v, want %s first", i, r["what"], want)
		}
	}
	if d := w.Runtime.MailboxDepth("a"); d != 0 {
		t.Fatalf("depth %d after draining", d)
	}
}

// TestDeliverAndAddressing checks Deliver's errors and the fnv1a64
// sharding of Pick, Route and Entry.
func TestDeliverAndAddressing(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			luatest.ActorYAML("a", "", "\n      - {id: 1, binding: who}"),
			luatest.ActorYAML("p", "instances: 4", "")),
		"a.lua": `local M = {} function M.who() return "a" end return M`,
		"p.lua": `return {}`,
	})
	in := &ingress.ClientIngress{Client: luatest.Client(1, 1), Body: []byte("{}"), Codec: "json"}
	for _, target := range []egress.ActorID{{Service: "nosuch"}, {Service: "a", Instance: 1}, {Service: "a", Instance: -1}} {
		if err := w.Runtime.Deliver(target, in); err == nil || err.Code != codes.Unavailable {
			t.Fatalf("deliver to %v: %v", target, err)
		}
	}
	// FNV-1a 64 test vectors.
	for key, sum := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c, "foobar": 0x85944171f73967e8} {
		for _, n := range []int{1, 3, 4, 7} {
			if got := service.Shard(key, n); got != int(sum%uint64(n)) {
				t.Fatalf("Shard(%q, %d) = %d, want %d", key, n, got, sum%uint64(n))
			}
		}
	}
	if id, err := w.Runtime.Pick("p", "foobar"); err != nil || id != (egress.ActorID{Service: "p", Instance: int(0x85944171f73967e8 % 4)}) {
		t.Fatalf("Pick: %v %v", id, err)
	}
	if id, err := w.Runtime.Pick("a", "foobar"); err != nil || id.Instance != 0 {
		t.Fatalf("Pick with one instance: %v %v", id, err)
	}
	if _, err := w.Runtime.Pick("nosuch", "x"); err == nil || err.Code != codes.Unavailable {
		t.Fatalf("Pick of an unknown service: %v", err)
	}
	if id, err := w.Runtime.Entry("p", 10); err != nil || id.Instance != 2 {
		t.Fatalf("Entry: %v %v", id, err)
	}
	if _, err := w.Runtime.Entry("nosuch", 1); err == nil {
		t.Fatal("Entry of an unknown service")
	}
	if w.Runtime.VMs("p") != 4 || w.Runtime.VMs("nosuch") != 0 {
		t.Fatal("Instances")
	}
}
