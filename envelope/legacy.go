package envelope

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
)

// The legacy envelopes (lenprefix, delimiter) carry each frame as one JSON
// object, the wrapper (SPEC.md section 3):
//
//	{"type":"request","route":"move","route_id":3001,"request_id":5,"payload":{"x":1}}
//
// Decoding rules, where the SPEC is silent:
//   - keys other than type, route, route_id, request_id, code, message and
//     payload are ignored, so that clients may add tracing fields;
//   - a null value reads as an absent key, as encoding/json treats it,
//     except for payload, whose null is kept as the JSON body "null";
//   - type is a known kind's name; route, code and message are strings;
//     route_id is an integer in 0..2^32-1 and request_id in 0..2^64-1,
//     written without fraction, exponent or sign; anything else is
//     bad_wrapper;
//   - route_id 0 counts as absent, so the route is then named by route;
//   - a notice's token and grace_ms are a status frame's (SPEC §3), and an
//     error's or a notice's retry_after_ms is a status body's;
//   - a request's deadline_ms (an integer, 0 or absent: none) is the
//     budget its client declares (docs/protocol.md "Deadlines"), and its
//     traceparent (a string of at most 55 bytes) the trace it is part of
//     (docs/tracing.md);
//   - only the fields the frame's kind carries are kept (see Frame).
//
// Encoding writes the keys in the fixed order type, route, route_id,
// request_id, deadline_ms, traceparent, code, message, payload; it omits
// route when empty, payload when Body is empty, a request's or notify's
// route_id when 0, and deadline_ms and traceparent unless a request
// carries one.

// wrapper holds a wrapper's fields after their types were checked.
type wrapper struct {
	kind        Kind // 0 when "type" is absent
	route       string
	routeID     uint32
	requestID   uint64
	code        string
	message     string
	token       string
	graceMS     int64
	retryMS     int64
	deadline    int64
	traceParent string
	payload     json.RawMessage // a fresh copy, owned by the caller
}

// parseWrapper checks data's JSON and the types of its known fields. The
// payload is copied out of data (json.RawMessage does that), so data may be
// a reused buffer.
func parseWrapper(data []byte) (wrapper, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil || m == nil {
		return wrapper{}, protoErr(ReasonBadWrapper, "not a JSON object: %q", prefix(data))
	}
	var w wrapper
	if s, present, ok := jsonString(m["type"]); !ok {
		return wrapper{}, badField("type", m["type"])
	} else if present {
		if w.kind, ok = parseKind(s); !ok {
			return wrapper{}, protoErr(ReasonBadWrapper, "unknown type %q", prefix([]byte(s)))
		}
	}
	var ok bool
	if w.route, _, ok = jsonString(m["route"]); !ok {
		return wrapper{}, badField("route", m["route"])
	}
	if w.code, _, ok = jsonString(m["code"]); !ok {
		return wrapper{}, badField("code", m["code"])
	}
	if w.message, _, ok = jsonString(m["message"]); !ok {
		return wrapper{}, badField("message", m["message"])
	}
	if w.token, _, ok = jsonString(m["token"]); !ok {
		return wrapper{}, badField("token", m["token"])
	}
	grace, ok := jsonUint(m["grace_ms"], math.MaxInt64)
	if !ok {
		return wrapper{}, badField("grace_ms", m["grace_ms"])
	}
	w.graceMS = int64(grace)
	retry, ok := jsonUint(m["retry_after_ms"], math.MaxInt64)
	if !ok {
		return wrapper{}, badField("retry_after_ms", m["retry_after_ms"])
	}
	w.retryMS = int64(retry)
	deadline, ok := jsonUint(m["deadline_ms"], math.MaxInt64)
	if !ok {
		return wrapper{}, badField("deadline_ms", m["deadline_ms"])
	}
	w.deadline = int64(deadline)
	if w.traceParent, _, ok = jsonString(m["traceparent"]); !ok || len(w.traceParent) > maxTraceParent {
		return wrapper{}, badField("traceparent", m["traceparent"])
	}
	routeID, ok := jsonUint(m["route_id"], math.MaxUint32)
	if !ok {
		return wrapper{}, badField("route_id", m["route_id"])
	}
	w.routeID = uint32(routeID)
	if w.requestID, ok = jsonUint(m["request_id"], math.MaxUint64); !ok {
		return wrapper{}, badField("request_id", m["request_id"])
	}
	w.payload = m["payload"]
	return w, nil
}

// badField reports a wrapper field of the wrong type.
func badField(key string, raw json.RawMessage) error {
	return protoErr(ReasonBadWrapper, "%q has the wrong type: %q", key, prefix(raw))
}

// jsonUint decodes a raw JSON value that must be an integer in 0..limit.
// Absent and null read as 0.
func jsonUint(raw json.RawMessage, limit uint64) (uint64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, true
	}
	// ParseUint refuses signs, fractions and exponents, which is the rule.
	v, err := strconv.ParseUint(string(raw), 10, 64)
	return v, err == nil && v <= limit
}

// legacyFrame turns a parsed wrapper into the Frame side may send.
func legacyFrame(w wrapper, side Side) (Frame, error) {
	kind := w.kind
	if kind == 0 {
		kind = Notify
		if w.requestID > 0 {
			kind = Request
		}
	}
	f := Frame{Kind: kind}
	switch kind {
	case Request, Response:
		f.Route, f.RouteID, f.RequestID, f.Body = w.route, w.routeID, w.requestID, nonEmpty(w.payload)
		if kind == Request {
			f.DeadlineMS, f.TraceParent = w.deadline, w.traceParent
		}
	case Notify, Push:
		f.Route, f.RouteID, f.Body = w.route, w.routeID, nonEmpty(w.payload)
	case Error:
		f.Route, f.RouteID, f.RequestID, f.Code, f.Message = w.route, w.routeID, w.requestID, w.code, w.message
		f.RetryAfterMS = w.retryMS
	case Notice:
		f.Code, f.Message, f.Token, f.GraceMS = w.code, w.message, w.token, w.graceMS
		f.RetryAfterMS = w.retryMS
	default:
		// A heartbeat carries nothing, but a client's first one may be a
		// resume: {"type":"heartbeat","payload":{"resume":"<token>"}}.
		// Other payloads are ignored, as they always were.
		if side == FromClient && isResumePayload(w.payload) {
			tok, err := parseResume(w.payload)
			if err != nil {
				return Frame{}, protoErr(ReasonBadWrapper, "heartbeat payload is not a resume: %q", prefix(w.payload))
			}
			f.Token = tok
		}
	}
	if side == FromClient {
		switch kind {
		case Request, Notify, Heartbeat:
		default:
			return Frame{}, protoErr(ReasonBadType, "type %q from a client", kind.String())
		}
		// A client's request and notify must be routable and a request
		// answerable; the gateway must not have to guess.
		if (kind == Request || kind == Notify) && f.RouteID == 0 && f.Route == "" {
			return Frame{}, protoErr(ReasonBadWrapper, "%s without route_id or route", kind)
		}
		if kind == Request && f.RequestID == 0 {
			return Frame{}, protoErr(ReasonBadWrapper, "request without request_id")
		}
		return f, nil
	}
	switch kind {
	case Response, Push, Error, Notice, Heartbeat:
		return f, nil
	default:
		return Frame{}, protoErr(ReasonBadType, "type %q from the gateway", kind.String())
	}
}

// isResumePayload reports whether a heartbeat's payload is an object with
// a "resume" key, which makes it a resume.
func isResumePayload(p json.RawMessage) bool {
	var m map[string]json.RawMessage
	if len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &m) != nil {
		return false
	}
	_, ok := m["resume"]
	return ok
}

// nonEmpty returns nil for an empty payload, so that a decoded Body is nil
// exactly when it has no bytes.
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// decodeWrapper decodes one wrapper's bytes into side's Frame, *f, which
// is zero and stays so on error.
func decodeWrapper(data []byte, side Side, f *Frame) error {
	w, err := parseWrapper(data)
	if err != nil {
		return err
	}
	*f, err = legacyFrame(w, side)
	return err
}

// appendWrapper appends f's wrapper. oneLine drops the newlines a payload
// may hold between its tokens (a valid JSON document has none inside its
// strings), so that the delimiter envelope's frame stays one line.
func appendWrapper(dst []byte, f *Frame, env string, oneLine bool) ([]byte, error) {
	if err := checkWrapper(f, env); err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, wrapperSize(f))
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, f.Kind.String())
	if f.Kind == Heartbeat {
		if f.Token != "" {
			dst = append(dst, `,"payload":`...)
			dst = appendResume(dst, f.Token)
		}
		return append(dst, '}'), nil
	}
	if f.Kind != Notice {
		if f.Route != "" {
			dst = append(dst, `,"route":`...)
			dst = appendJSONString(dst, f.Route)
		}
		// Answers and pushes always say their route_id; a client's frame
		// may name its route by route alone.
		if f.RouteID != 0 || (f.Kind != Request && f.Kind != Notify) {
			dst = append(dst, `,"route_id":`...)
			dst = strconv.AppendUint(dst, uint64(f.RouteID), 10)
		}
	}
	switch f.Kind {
	case Request, Response, Error:
		dst = append(dst, `,"request_id":`...)
		dst = strconv.AppendUint(dst, f.RequestID, 10)
	}
	if f.Kind == Request && f.DeadlineMS > 0 {
		dst = append(dst, `,"deadline_ms":`...)
		dst = strconv.AppendInt(dst, f.DeadlineMS, 10)
	}
	if f.Kind == Request && f.TraceParent != "" {
		dst = append(dst, `,"traceparent":`...)
		dst = appendJSONString(dst, f.TraceParent)
	}
	switch f.Kind {
	case Error, Notice:
		// The status body's keys, at the top level (SPEC §3).
		dst = append(dst, ',')
		dst = appendStatusFields(dst, f)
	default:
		if len(f.Body) > 0 {
			dst = append(dst, `,"payload":`...)
			if f.Binary {
				dst = append(dst, '"')
				dst = base64.StdEncoding.AppendEncode(dst, f.Body)
				dst = append(dst, '"')
			} else {
				dst = appendPayload(dst, f.Body, oneLine)
			}
		}
	}
	return append(dst, '}'), nil
}

// checkWrapper refuses a frame that the peer's decoder would reject or read
// differently: an unknown kind, a request without request_id, a request or
// notify without a route, a payload that is not JSON.
func checkWrapper(f *Frame, env string) error {
	switch f.Kind {
	case Request, Notify:
		if f.RouteID == 0 && f.Route == "" {
			return invalid(env, f, "no route_id or route")
		}
		if f.Kind == Request && f.RequestID == 0 {
			return invalid(env, f, "request_id 0")
		}
	case Response, Push, Error, Notice, Heartbeat:
	default:
		return invalid(env, f, "unknown kind")
	}
	switch f.Kind {
	case Request, Notify, Response, Push:
		if len(f.Body) > 0 && !f.Binary && !json.Valid(f.Body) {
			return invalid(env, f, "payload is not JSON: %q", prefix(f.Body))
		}
	}
	return nil
}

// wrapperSize estimates appendWrapper's output so dst grows once.
func wrapperSize(f *Frame) int {
	const keys = len(`{"type":"","route":"","route_id":4294967295,"request_id":18446744073709551615,"code":"","message":"","payload":}`)
	return keys + len("heartbeat") + len(f.Route) + len(f.Code) + len(f.Message) + len(f.Token) + len(f.TraceParent) +
		len(`,"traceparent":"","token":"","grace_ms":9223372036854775807,"deadline_ms":9223372036854775807,"retry_after_ms":9223372036854775807`) + base64.StdEncoding.EncodedLen(len(f.Body))
}

// wrapperBuffers are scratch buffers for legacySize.
var wrapperBuffers = sync.Pool{New: func() any { return new([]byte) }}

// legacySize is the length of f's wrapper, measured by encoding it into a
// scratch buffer: the wrapper's escapes and a delimiter payload's dropped
// newlines make counting it as error-prone as writing it.
func legacySize(f *Frame, env string, oneLine bool) int {
	bp := wrapperBuffers.Get().(*[]byte)
	out, err := appendWrapper((*bp)[:0], f, env, oneLine)
	n := len(out)
	if err != nil {
		n = 0
	}
	if cap(out) <= 64<<10 {
		*bp = out[:0]
	}
	wrapperBuffers.Put(bp)
	return n
}

// appendPayload appends a payload already checked to be valid JSON, without
// its newlines when oneLine is set.
func appendPayload(dst, body []byte, oneLine bool) []byte {
	if !oneLine {
		return append(dst, body...)
	}
	for {
		i := slices.Index(body, '\n')
		if i < 0 {
			return append(dst, body...)
		}
		dst = append(dst, body[:i]...)
		body = body[i+1:]
	}
}
