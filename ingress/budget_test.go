package ingress

import (
	"testing"
	"time"
)

// TestDeclaredBudget: a declared deadline_ms is clamped to [1 s, 60 s] at
// each end, and only ever shortens the handler_timeout.
func TestDeclaredBudget(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want time.Duration
	}{
		{0, 0}, {-5, 0},
		{1, time.Second}, {999, time.Second}, {1000, time.Second},
		{1001, 1001 * time.Millisecond}, {2500, 2500 * time.Millisecond},
		{59999, 59999 * time.Millisecond}, {60000, time.Minute}, {60001, time.Minute},
		{1 << 62, time.Minute},
	} {
		if got := DeclaredBudget(c.ms); got != c.want {
			t.Errorf("DeclaredBudget(%d) = %v, want %v", c.ms, got, c.want)
		}
	}
	for _, c := range []struct {
		declared, timeout, want time.Duration
	}{
		{0, 5 * time.Second, 5 * time.Second},
		{2 * time.Second, 5 * time.Second, 2 * time.Second},
		{time.Minute, 5 * time.Second, 5 * time.Second},
		{time.Second, 500 * time.Millisecond, 500 * time.Millisecond},
	} {
		in := ClientIngress{Budget: c.declared}
		if got := in.BudgetWithin(c.timeout); got != c.want {
			t.Errorf("declared %v, handler_timeout %v: budget %v, want %v", c.declared, c.timeout, got, c.want)
		}
	}
}
