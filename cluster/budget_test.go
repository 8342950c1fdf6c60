package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestDeclaredBudgetCrossesNodes: a budget the client declares (docs/
// protocol.md "Deadlines") travels with its frame from gateway B to front
// on A, and from there with front's shield.call to calc on S, as the
// handler_timeout's budget does: calc sees what is left of the declared
// 1.5 s, not of front's 2 s.
func TestDeclaredBudgetCrossesNodes(t *testing.T) {
	testutil.CheckGoroutines(t)
	_, b, _ := threeNodes(t)
	left := func(declare bool) float64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := client.Dial(ctx, b.Addr("front"), client.Options{DeclareDeadlines: declare})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		callCtx, cancelCall := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancelCall()
		var r struct {
			OK    bool    `json:"ok"`
			Value float64 `json:"value"`
		}
		if err := c.Call(callCtx, routeCall, map[string]any{"method": "budget"}, &r); err != nil || !r.OK {
			t.Fatalf("budget (declare %v): %+v, %v", declare, r, err)
		}
		return r.Value
	}
	if ms := left(true); ms > 1500 || ms < 500 {
		t.Errorf("declared 1.5 s: calc has %v ms left, want 500..1500", ms)
	}
	// Not declared, the same call runs on front's handler_timeout.
	if ms := left(false); ms <= 1500 || ms > 2000 {
		t.Errorf("none declared: calc has %v ms left, want 1500..2000 (front's 2 s)", ms)
	}
}
