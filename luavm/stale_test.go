package luavm_test

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/luatest"
)

// TestLateBindStillStalesTheOldEpoch: a bind whose caller ran out of its
// budget before the outcome came (a cluster's bind reply, late) still
// makes the old epoch's frames queued in the VM stale once it succeeds,
// as a bind answered in time does (SPEC §4).
func TestLateBindStillStalesTheOldEpoch(t *testing.T) {
	cases := []luaCase{
		{name: "bind, answered after the budget", body: `return shield.client.bind(client, "late", "b")`, want: "client_rpc.timeout"},
		{name: "a frame of the same epoch", body: `return "ran"`},
	}
	a, aScript := caseActor("a", "handler_timeout: 300ms", "", cases)
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", a, luatest.ActorYAML("b", "", "")),
		"a.lua":       aScript,
		"b.lua":       "return {}",
	})
	luatest.Expect(t, w.Ask(t, "a", 1, "{}"), "client_rpc.timeout", "")
	if r := w.Ask(t, "a", 2, "{}"); r.Err != nil || string(r.Body) != `"ran"` {
		t.Fatalf("before the bind's outcome: %+v, want \"ran\"", r)
	}
	if n := w.Gateway.ReleaseLate(); n != 1 {
		t.Fatalf("%d binds held, want 1", n)
	}
	// The outcome reaches the VM as a message of its own: ask until it
	// has (every old-epoch frame read before the mark is stale for the
	// VM's handler_timeout after it, so within that time).
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		r := w.Ask(t, "a", 2, "{}")
		if r.Err != nil && r.Err.Code == "client_rpc.epoch_expired" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a frame of the old epoch after the late bind succeeded: %+v %v, want client_rpc.epoch_expired", string(r.Body), r.Err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
