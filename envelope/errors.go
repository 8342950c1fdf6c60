package envelope

import (
	"errors"
	"fmt"
)

// Reason is why a connection is closed for a protocol violation. It is the
// label of shield_protocol_errors_total{reason}, so the set is closed and the
// values are SPEC.md section 3's, byte for byte.
type Reason string

// The protocol error reasons of SPEC.md section 3.
const (
	// ReasonBadVersion: a header's version byte is not Version.
	ReasonBadVersion Reason = "bad_version"
	// ReasonTooLarge: a length (or a line, or a WebSocket message) above
	// max_frame_bytes.
	ReasonTooLarge Reason = "too_large"
	// ReasonTooShort: a length below the header size (0 for lenprefix).
	ReasonTooShort Reason = "too_short"
	// ReasonBadSystemFrame: route 0 misuse, or a frame whose ids do not fit
	// its kind (a request without a request_id, a heartbeat with a body).
	ReasonBadSystemFrame Reason = "bad_system_frame"
	// ReasonBadType: a kind the peer may not send, or an unknown typelen type.
	ReasonBadType Reason = "bad_type"
	// ReasonBadWrapper: a legacy wrapper that is not a JSON object, has
	// fields of the wrong type, or lacks what its kind needs.
	ReasonBadWrapper Reason = "bad_wrapper"
	// ReasonTruncated: EOF inside a frame.
	ReasonTruncated Reason = "truncated"
)

// ProtocolError is a connection-fatal violation of the envelope: the caller
// counts Reason and closes the connection. It never carries a request id,
// because nothing about a frame that broke the envelope can be trusted.
type ProtocolError struct {
	Reason Reason
	// Detail says what was wrong for the log; it quotes at most a short
	// prefix of the bad input.
	Detail string
}

// Error formats the error as "envelope: <reason>: <detail>".
func (e *ProtocolError) Error() string {
	if e.Detail == "" {
		return "envelope: " + string(e.Reason)
	}
	return "envelope: " + string(e.Reason) + ": " + e.Detail
}

// Is makes errors.Is(err, &ProtocolError{Reason: r}) match any ProtocolError
// with reason r, so callers test reasons without looking at details.
func (e *ProtocolError) Is(target error) bool {
	t, ok := target.(*ProtocolError)
	return ok && t.Reason == e.Reason && (t.Detail == "" || t.Detail == e.Detail)
}

// ReasonOf returns the reason of the first ProtocolError in err's chain.
func ReasonOf(err error) (Reason, bool) {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Reason, true
	}
	return "", false
}

// ErrInvalidFrame is wrapped by every encoding error: the Frame cannot be put
// on this envelope as it is (a missing id, an id wider than the header's
// field, an unknown kind, a legacy payload that is not JSON). It is the
// caller's bug, never the peer's, so it is not a ProtocolError.
var ErrInvalidFrame = errors.New("invalid frame")

// ErrUnknownEnvelope is returned by New for a name that is not an envelope.
var ErrUnknownEnvelope = errors.New("unknown envelope")

// protoErr builds a ProtocolError with a formatted detail.
func protoErr(r Reason, format string, args ...any) *ProtocolError {
	return &ProtocolError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// invalid builds an encoding error that wraps ErrInvalidFrame.
func invalid(env string, f *Frame, format string, args ...any) error {
	return fmt.Errorf("envelope: %s: encode %s: %s: %w", env, f.Kind, fmt.Sprintf(format, args...), ErrInvalidFrame)
}

// quoteLimit caps how much of a bad input an error quotes: enough to
// recognise it in a log, never a whole body.
const quoteLimit = 32

// prefix returns at most quoteLimit bytes of b, for quoting with %q.
func prefix(b []byte) []byte {
	if len(b) > quoteLimit {
		return b[:quoteLimit]
	}
	return b
}
