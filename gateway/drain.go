package gateway

import (
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// DrainSession drains one session (POST /admin/drain, docs/protocol.md
// §6): it gets the gateway.drain_started status frame with grace_ms and
// retry_after_ms, its new requests are refused with client_rpc.draining
// and the time left until retryAfter has passed, what it has in flight
// finishes, and when grace ends it gets the gateway.draining notice and
// closes with reason draining. A grace of 0, or a suspended session,
// closes at once. It reports false when s is closed or draining already.
func (g *Gateway) DrainSession(s *session.Session, grace, retryAfter time.Duration) bool {
	now := time.Now()
	retryAt := now.Add(retryAfter)
	var heads *envelope.Frame
	if grace > 0 {
		heads = &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDrainStarted),
			GraceMS: max(grace.Milliseconds(), 1), RetryAfterMS: retryMS(retryAfter)}
	}
	// The notice at the end carries what is left of the hint, if anything.
	bye := &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDraining),
		Message: "an operator drained the session", RetryAfterMS: retryMS(retryAfter - grace)}
	return s.Drain(grace, retryAt, heads, bye)
}

// retryMS is a retry hint in whole milliseconds, rounded up so that a
// hint under a millisecond is still one; 0 (none) for d <= 0.
func retryMS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
