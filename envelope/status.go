package envelope

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// The status body of Error and Notice frames on the header envelopes is a
// compact JSON object whose first key is "code" (SPEC §3), without HTML
// escaping, so that clients and tests may compare it byte for byte:
//
//	{"code":"...","message":"..."}     an error, a notice, session.resume_failed
//	{"code":"...","token":"..."}       session.resume_token, session.resumed
//	{"code":"...","grace_ms":N}        gateway.drain_started
//
// A Notice with a Token is written with it, else one with a GraceMS with
// it, else with its Message; an Error always has a message. An Error or a
// Notice with a RetryAfterMS ends with ,"retry_after_ms":N (the drain of
// one session, and busy and rate_limited under session.retry_hints,
// docs/protocol.md §6): without one the body is SPEC §3's to the byte.

// appendStatus appends f's status JSON body.
func appendStatus(dst []byte, f *Frame) []byte {
	dst = append(dst, '{')
	dst = appendStatusFields(dst, f)
	return append(dst, '}')
}

// appendStatusFields appends the status body's fields without the braces:
// the code, then the token, the grace_ms or the message. The legacy
// envelopes put them at the top level of their wrapper.
func appendStatusFields(dst []byte, f *Frame) []byte {
	dst = append(dst, `"code":`...)
	dst = appendJSONString(dst, f.Code)
	switch {
	case f.Kind == Notice && f.Token != "":
		dst = append(dst, `,"token":`...)
		dst = appendJSONString(dst, f.Token)
	case f.Kind == Notice && f.GraceMS > 0:
		dst = append(dst, `,"grace_ms":`...)
		dst = strconv.AppendInt(dst, f.GraceMS, 10)
	default:
		dst = append(dst, `,"message":`...)
		dst = appendJSONString(dst, f.Message)
	}
	if f.RetryAfterMS > 0 {
		dst = append(dst, `,"retry_after_ms":`...)
		dst = strconv.AppendInt(dst, f.RetryAfterMS, 10)
	}
	return dst
}

// statusSize is the length of appendStatus's output for f.
func statusSize(f *Frame) int {
	n := len(`{"code":}`) + jsonStringSize(f.Code)
	switch {
	case f.Kind == Notice && f.Token != "":
		n += len(`,"token":`) + jsonStringSize(f.Token)
	case f.Kind == Notice && f.GraceMS > 0:
		n += len(`,"grace_ms":`) + intSize(f.GraceMS)
	default:
		n += len(`,"message":`) + jsonStringSize(f.Message)
	}
	if f.RetryAfterMS > 0 {
		n += len(`,"retry_after_ms":`) + intSize(f.RetryAfterMS)
	}
	return n
}

// intSize is the length of a non-negative n in decimal.
func intSize(n int64) int {
	size := 1
	for ; n >= 10; n /= 10 {
		size++
	}
	return size
}

// status is a parsed status body.
type status struct {
	code, message, token string
	graceMS, retryMS     int64
}

// parseStatus reads a status body back. Unknown keys are ignored and a
// missing or null key reads as empty, as encoding/json would; a body that
// is not a JSON object, or a key of the wrong type (a code, message or
// token that is not a string, a grace_ms or retry_after_ms that is not a
// non-negative integer), is bad_system_frame: a route 0 frame whose body is not what
// route 0 means.
func parseStatus(body []byte) (status, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return status{}, protoErr(ReasonBadSystemFrame, "status body is not a JSON object: %q", prefix(body))
	}
	var st status
	for _, f := range []struct {
		key string
		dst *string
	}{{"code", &st.code}, {"message", &st.message}, {"token", &st.token}} {
		v, _, ok := jsonString(m[f.key])
		if !ok {
			return status{}, protoErr(ReasonBadSystemFrame, "status %q is not a string: %q", f.key, prefix(m[f.key]))
		}
		*f.dst = v
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{"grace_ms", &st.graceMS}, {"retry_after_ms", &st.retryMS}} {
		raw := m[f.key]
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n < 0 {
			return status{}, protoErr(ReasonBadSystemFrame, "status %q is not a count of milliseconds: %q", f.key, prefix(raw))
		}
		*f.dst = n
	}
	return st, nil
}

// A client's resume frame is a heartbeat whose body is
// {"resume":"<token>"} (SPEC §3, §4), exactly one string key.

// appendResume appends a resume body.
func appendResume(dst []byte, token string) []byte {
	dst = append(dst, `{"resume":`...)
	dst = appendJSONString(dst, token)
	return append(dst, '}')
}

// maxTokenBytes bounds a resume token: SPEC §4's tokens have at most 128
// characters.
const maxTokenBytes = 128

// parseResume reads a resume body: a JSON object holding a non-empty
// "resume" string of at most maxTokenBytes, and nothing else. Anything
// else on route 0 with a body is bad_system_frame.
func parseResume(body []byte) (string, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return "", protoErr(ReasonBadSystemFrame, "heartbeat body is not a resume: %q", prefix(body))
	}
	tok, present, ok := jsonString(m["resume"])
	if !ok || !present || tok == "" || len(tok) > maxTokenBytes || len(m) != 1 {
		return "", protoErr(ReasonBadSystemFrame, "heartbeat body is not a resume: %q", prefix(body))
	}
	return tok, nil
}

// A client's Deadline frame's body (docs/protocol.md "Deadlines",
// docs/tracing.md) is an object of one or both of "deadline_ms": N, an
// integer of at least 1 written without sign, fraction or exponent, and
// "traceparent": a string of at most maxTraceParent bytes. The gateway
// clamps N and parses the traceparent (ignoring one that is not W3C's);
// the envelope only checks their types.

// maxTraceParent bounds a traceparent: W3C's version 00 is 55 bytes.
const maxTraceParent = 55

// maxDeadlineBody bounds a Deadline frame's body: both keys, 19 digits
// and the longest traceparent fit, so a longer body is refused from its
// header, before it is read.
const maxDeadlineBody = len(`{"deadline_ms":9223372036854775807,"traceparent":""}`) + maxTraceParent + 16 // and some spaces

// appendDeadline appends a Deadline frame's body.
func appendDeadline(dst []byte, f *Frame) []byte {
	dst = append(dst, '{')
	if f.DeadlineMS > 0 {
		dst = append(dst, `"deadline_ms":`...)
		dst = strconv.AppendInt(dst, f.DeadlineMS, 10)
	}
	if f.TraceParent != "" {
		if f.DeadlineMS > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `"traceparent":`...)
		dst = appendJSONString(dst, f.TraceParent)
	}
	return append(dst, '}')
}

// deadlineSize is how many bytes appendDeadline appends for a traceparent
// without escapes (a valid one has none; encoders refuse the others).
func deadlineSize(f *Frame) int {
	n := len(`{}`)
	if f.DeadlineMS > 0 {
		n += len(`"deadline_ms":`) + len(strconv.FormatInt(f.DeadlineMS, 10))
	}
	if f.TraceParent != "" {
		if f.DeadlineMS > 0 {
			n++
		}
		n += len(`"traceparent":`) + jsonStringSize(f.TraceParent)
	}
	return n
}

// parseDeadline reads a Deadline frame's body; anything else is
// bad_system_frame.
func parseDeadline(body []byte) (ms int64, traceParent string, err error) {
	var m map[string]json.RawMessage
	if len(body) > maxDeadlineBody || json.Unmarshal(body, &m) != nil || len(m) == 0 {
		return 0, "", protoErr(ReasonBadSystemFrame, "deadline body is not {\"deadline_ms\":N} or {\"traceparent\":\"...\"}: %q", prefix(body))
	}
	known := 0
	if raw, present := m["deadline_ms"]; present {
		known++
		n, ok := jsonUint(raw, math.MaxInt64)
		if !ok || n == 0 {
			return 0, "", protoErr(ReasonBadSystemFrame, "deadline_ms is not a count of milliseconds of at least 1: %q", prefix(body))
		}
		ms = int64(n)
	}
	if raw, present := m["traceparent"]; present {
		known++
		tp, given, ok := jsonString(raw)
		if !ok || !given || tp == "" || len(tp) > maxTraceParent {
			return 0, "", protoErr(ReasonBadSystemFrame, "traceparent is not a string of 1 to %d bytes: %q", maxTraceParent, prefix(body))
		}
		traceParent = tp
	}
	if known != len(m) {
		return 0, "", protoErr(ReasonBadSystemFrame, "deadline body has a key other than deadline_ms and traceparent: %q", prefix(body))
	}
	return ms, traceParent, nil
}

// jsonString decodes a raw JSON value that must be a string. Absent (nil) and
// null read as "", present false; any other JSON type is ok false.
func jsonString(raw json.RawMessage) (s string, present, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, true
	}
	if raw[0] != '"' {
		return "", true, false
	}
	// raw comes out of a document encoding/json has validated, so a
	// string without escapes and with valid UTF-8 is its own content; only
	// the others need the full decoder.
	if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true, true
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", true, false
	}
	return s, true, true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping as encoding/json does
// with SetEscapeHTML(false): quotes, backslashes and control characters are
// escaped, U+2028 and U+2029 too (JavaScript clients choke on them), and
// invalid UTF-8 becomes U+FFFD. It exists because json.Marshal allocates and
// escapes HTML, and encoders here only append.
// Not shared with codec.appendString, which rejects bad UTF-8 and keeps U+2028.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonStringSize is the length of appendJSONString's output for s.
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			switch {
			case b >= 0x20 && b != '"' && b != '\\':
				n++
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
