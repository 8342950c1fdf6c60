// Package codes is the closed set of error and notice codes that clients, Lua
// services and operators see (SPEC.md sections 3 to 7), and the typed error that
// carries one.
//
// A code is a stable string: tests outside the project compare it byte for
// byte, so a code is never renamed and never built at run time. Go code decides
// by code with errors.As or CodeOf, never by matching message text.
package codes

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Code is a stable, dotted error or notice code such as "client_rpc.busy".
type Code string

// Request-scoped codes: sent back on an error frame with the request's id, or
// returned to Lua as `nil, code`. The session lives on.
const (
	RouteNotFound     Code = "client_rpc.route_not_found"
	DirectionRejected Code = "client_rpc.direction_rejected"
	NotAuthenticated  Code = "client_rpc.not_authenticated"
	Dropped           Code = "client_rpc.dropped"
	RateLimited       Code = "client_rpc.rate_limited"
	Busy              Code = "client_rpc.busy"
	DecodeFailed      Code = "client_rpc.decode_failed"
	SchemaViolation   Code = "client_rpc.schema_violation"
	HandlerMissing    Code = "client_rpc.handler_missing"
	HandlerFailed     Code = "client_rpc.handler_failed"
	Timeout           Code = "client_rpc.timeout"
	Unavailable       Code = "client_rpc.unavailable"
	ResourceExhausted Code = "client_rpc.resource_exhausted"
	EpochExpired      Code = "client_rpc.epoch_expired"
	NotTarget         Code = "client_rpc.not_target"
	PlayerOnline      Code = "client_rpc.player_online"
	GatewayMismatch   Code = "client_rpc.gateway_mismatch"
	SessionNotFound   Code = "client_rpc.session_not_found"
	PlayerMismatch    Code = "client_rpc.player_mismatch"
	QueueFull         Code = "client_rpc.queue_full"
	// Draining refuses a request from a session an operator is draining
	// (POST /admin/drain), with retry_after_ms (docs/protocol.md §6).
	Draining Code = "client_rpc.draining"
	// The rooms' codes (docs/rooms.md §4.4).
	RoomNotFound       Code = "client_rpc.room_not_found"
	RoomFull           Code = "client_rpc.room_full"
	ReservationInvalid Code = "client_rpc.reservation_invalid"
	JoinRefused        Code = "client_rpc.join_refused"
	InRoom             Code = "client_rpc.in_room"
	NotMember          Code = "client_rpc.not_member"
	AlreadyQueued      Code = "client_rpc.already_queued"
)

// Notice codes: sent on route 0 just before the gateway closes a session on
// purpose.
const (
	SessionKicked      Code = "session.kicked"
	SessionIdleTimeout Code = "session.idle_timeout"
	SessionRateLimited Code = "session.rate_limited"
	SessionAuthTimeout Code = "session.auth_timeout"
	SessionTargetLost  Code = "session.target_lost"
	GatewayDraining    Code = "gateway.draining"
)

// Status codes: sent on route 0, and the session goes on (SPEC §3). A
// client ignores status codes it does not know.
const (
	SessionResumeToken  Code = "session.resume_token"  // with token: after each bind
	SessionResumed      Code = "session.resumed"       // with token: a resume took the session over
	SessionResumeFailed Code = "session.resume_failed" // with message: the connection goes on as a new session
	GatewayDrainStarted Code = "gateway.drain_started" // with grace_ms: the drain began
)

// IsNotice reports whether c is one of the notice codes, which close the
// session; any other code on a route-0 frame is a status (SPEC §3).
func IsNotice(c Code) bool {
	switch c {
	case SessionKicked, SessionIdleTimeout, SessionRateLimited, SessionAuthTimeout, SessionTargetLost, GatewayDraining:
		return true
	}
	return false
}

// Reason is the code without its "client_rpc." prefix, as metric labels use it
// (shield_edge_dropped_total{reason="route_not_found"}).
func (c Code) Reason() string {
	return strings.TrimPrefix(string(c), "client_rpc.")
}

// Error is a code plus a human-readable message. It is plain data so that it
// can cross from a service to the gateway (and later between nodes) intact.
type Error struct {
	Code    Code
	Message string
}

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error formats the error as "code: message", or just the code.
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is makes errors.Is(err, &Error{Code: c}) match any Error with code c, so a
// caller can test for a code without caring about the message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// CodeOf returns the code of the first Error in err's chain.
func CodeOf(err error) (Code, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Code, true
	}
	return "", false
}

// businessCode is SPEC section 6's shape of a code a service may raise.
var businessCode = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)

// reservedPrefixes are the namespaces owned by Shield itself.
var reservedPrefixes = []string{"client_rpc.", "session.", "gateway."}

// ValidBusiness reports whether s may be raised by shield.error: it matches
// the business-code shape and is outside Shield's own namespaces.
func ValidBusiness(s string) bool {
	if !businessCode.MatchString(s) {
		return false
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(s, p) {
			return false
		}
	}
	return true
}
