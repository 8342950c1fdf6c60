package envelope

import "strconv"

// Kind is what a frame is. The values are typelen's type byte (SPEC.md
// section 3), so typelen puts a Kind on the wire as it is; the other
// envelopes derive it from the ids (idlen) or the wrapper's "type" (legacy).
type Kind uint8

// The frame kinds, numbered as typelen's type byte.
const (
	// Request is a client call that gets exactly one Response or Error.
	Request Kind = 1
	// Response answers a Request with the handler's return value.
	Response Kind = 2
	// Error answers a Request with a code and a message.
	Error Kind = 3
	// Push is a server-to-client message on an s2c or bidi route.
	Push Kind = 4
	// Heartbeat is sent by a client and echoed by the gateway.
	Heartbeat Kind = 5
	// Notice carries a code and a message just before the gateway closes a
	// session on purpose (session.kicked, gateway.draining, ...), or a
	// status the session goes on after (session.resume_token,
	// gateway.drain_started, ...): both are type 6 on the wire.
	Notice Kind = 6
	// Notify is a client message that never gets an answer.
	Notify Kind = 7
	// Deadline is a client's declared budget for its next frame, the
	// request with the same request_id (docs/protocol.md "Deadlines"): on
	// the header envelopes a frame of its own, body {"deadline_ms":N};
	// the legacy envelopes carry deadline_ms on the request's wrapper
	// instead, so they never put this kind on the wire.
	Deadline Kind = 8
)

// kindNames are the legacy wrapper's "type" values, indexed by Kind.
var kindNames = [...]string{
	Request:   "request",
	Response:  "response",
	Error:     "error",
	Push:      "push",
	Heartbeat: "heartbeat",
	Notice:    "notice",
	Notify:    "notify",
	Deadline:  "deadline",
}

// String returns the kind's name as the legacy wrapper's "type" spells it,
// or "kind(N)" for a value outside the set.
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// valid reports whether k is one of the eight kinds.
func (k Kind) valid() bool {
	return k >= Request && k <= Deadline
}

// parseKind maps a wrapper "type" value to its Kind: Deadline is not one
// (a legacy request carries its deadline_ms itself).
func parseKind(s string) (Kind, bool) {
	for k := Request; k <= Notify; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// Frame is one decoded frame, the same value whatever envelope carried it.
//
// Each kind carries only some fields; the others are zero after decoding and
// ignored when encoding:
//
//	Request    RouteID Route RequestID Body
//	Notify     RouteID Route           Body
//	Heartbeat                                            Token (a resume)
//	Response   RouteID Route RequestID Body
//	Push       RouteID Route           Body
//	Error      RouteID Route RequestID      Code Message RetryAfterMS
//	Notice                                  Code Message Token GraceMS RetryAfterMS
//	Deadline                   RequestID                                 DeadlineMS TraceParent
//
// A Request has a DeadlineMS and a TraceParent too once it is paired with
// the Deadline frame before it (the gateway does that), or from a legacy
// wrapper's deadline_ms and traceparent.
//
// Route is only on the legacy envelopes' wire; idlen never carries an Error's
// RouteID (its header says 0).
type Frame struct {
	Kind Kind
	// RouteID is the descriptor's wire id. A legacy frame that names its
	// route only by Route decodes with RouteID 0; the gateway then resolves
	// Route, and otherwise ignores it (route_id wins).
	RouteID uint32
	// RequestID pairs a Request with its Response or Error. It is 0 on
	// every other kind.
	RequestID uint64
	// Route is the descriptor's name, carried by the legacy envelopes only:
	// the gateway fills it on outbound frames, and a client may name a
	// route by it instead of RouteID.
	Route string
	// Body is the business body, opaque to the envelope. A decoded Body is
	// freshly allocated (it crosses goroutines) and nil when empty, and
	// nothing writes to it after the decode: the Lua string a handler gets
	// may share its memory. On the legacy envelopes it is the raw JSON of
	// "payload".
	Body []byte
	// Binary marks an outbound Body that is bytes, not JSON: a room's state
	// frame (docs/rooms.md §8.1). The header envelopes write it as it is;
	// the legacy ones write "payload" as a JSON string of its standard
	// base64, and a client decodes it by the route. Decoders never set it.
	Binary bool
	// Code and Message are an Error's or a Notice's. The header envelopes
	// carry them as the JSON body {"code":"...","message":"..."}.
	Code    string
	Message string
	// Token is a resume token: a client's resume frame (a Heartbeat whose
	// body is {"resume":"<token>"}) and the status frames
	// session.resume_token and session.resumed carry one.
	Token string
	// GraceMS is the grace_ms of the status frame gateway.drain_started.
	GraceMS int64
	// RetryAfterMS is an Error's or a Notice's retry_after_ms: how long
	// from this frame the client should wait before it tries again (a
	// drained session's frames, and busy and rate_limited under
	// session.retry_hints); 0 writes none.
	RetryAfterMS int64
	// DeadlineMS is the budget in milliseconds a client declares for a
	// request (a Deadline frame's, or a Request's); 0 declares none.
	DeadlineMS int64
	// TraceParent is the W3C traceparent a client sends with a request
	// (a Deadline frame's, or a Request's; docs/tracing.md), unparsed;
	// "" sends none.
	TraceParent string
}

// headerFrame builds the Frame of a header envelope (idlen, typelen) from
// ids and a body that classify has already matched to kind. When owned is
// false the body belongs to the caller (a WebSocket read buffer) and is
// copied, since the Frame is handed to another goroutine. f is zero, and
// stays so on error.
func headerFrame(f *Frame, kind Kind, routeID uint32, requestID uint64, body []byte, owned bool) error {
	switch kind {
	case Request, Response:
		f.RouteID, f.RequestID, f.Body = routeID, requestID, ownBody(body, owned)
	case Notify, Push:
		f.RouteID, f.Body = routeID, ownBody(body, owned)
	case Error, Notice:
		st, err := parseStatus(body)
		if err != nil {
			return err
		}
		f.Code, f.Message, f.RetryAfterMS = st.code, st.message, st.retryMS
		if kind == Error {
			f.RouteID, f.RequestID = routeID, requestID
		} else {
			f.Token, f.GraceMS = st.token, st.graceMS
		}
	case Heartbeat:
		if len(body) > 0 {
			tok, err := parseResume(body)
			if err != nil {
				return err
			}
			f.Token = tok
		}
	case Deadline:
		ms, tp, err := parseDeadline(body)
		if err != nil {
			return err
		}
		f.RequestID, f.DeadlineMS, f.TraceParent = requestID, ms, tp
	default:
		// classify never returns another kind; failing closed keeps a
		// future kind from being decoded half-way.
		return protoErr(ReasonBadType, "kind %d", kind)
	}
	f.Kind = kind
	return nil
}

// ownBody returns body, or a copy of it when the caller keeps the original;
// empty bodies become nil so that no allocation is made for them.
func ownBody(body []byte, owned bool) []byte {
	if len(body) == 0 {
		return nil
	}
	if owned {
		return body
	}
	return append(make([]byte, 0, len(body)), body...)
}

// appendHeaderBody appends what a header envelope puts after its header: the
// status JSON for Error and Notice, the business body for the kinds that
// carry one, nothing otherwise.
func appendHeaderBody(dst []byte, f *Frame) []byte {
	switch f.Kind {
	case Error, Notice:
		return appendStatus(dst, f)
	case Request, Response, Notify, Push:
		return append(dst, f.Body...)
	case Heartbeat:
		if f.Token != "" {
			return appendResume(dst, f.Token)
		}
		return dst
	case Deadline:
		return appendDeadline(dst, f)
	default:
		return dst
	}
}

// headerBodySize is how many bytes appendHeaderBody will append, exactly,
// so that encoders grow dst once and FrameSize needs no encoding.
func headerBodySize(f *Frame) int {
	switch f.Kind {
	case Error, Notice:
		return statusSize(f)
	case Request, Response, Notify, Push:
		return len(f.Body)
	case Heartbeat:
		if f.Token != "" {
			return len(`{"resume":}`) + jsonStringSize(f.Token)
		}
		return 0
	case Deadline:
		return deadlineSize(f)
	default:
		return 0
	}
}
