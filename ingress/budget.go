package ingress

import "time"

// A client may declare a request's budget (docs/protocol.md "Deadlines"):
// a deadline_ms on the request, which the gateway clamps to
// [MinDeclaredBudget, MaxDeclaredBudget] and the target VM shortens its
// handler_timeout to, never lengthens. The floor keeps a client from
// asking for budgets no handler can meet (a 1 ms budget would only turn
// requests into timeouts at the gateway's cost); the ceiling keeps a
// declared value from ever mattering above any sane handler_timeout.
const (
	MinDeclaredBudget = time.Second
	MaxDeclaredBudget = 60 * time.Second
)

// DeclaredBudget is the budget a request's deadline_ms declares, clamped;
// 0 (none declared) is 0.
func DeclaredBudget(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return 0
	case ms >= int64(MaxDeclaredBudget/time.Millisecond):
		return MaxDeclaredBudget
	}
	return max(time.Duration(ms)*time.Millisecond, MinDeclaredBudget)
}

// BudgetWithin is the handler's budget: handlerTimeout, or the client's
// declared budget when that is shorter. Either counts from Received.
func (in *ClientIngress) BudgetWithin(handlerTimeout time.Duration) time.Duration {
	if in.Budget > 0 && in.Budget < handlerTimeout {
		return in.Budget
	}
	return handlerTimeout
}
