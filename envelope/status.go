package envelope

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The status body of Error and Notice frames on the header envelopes is
// {"code":"...","message":"..."}: exactly these keys in this order, compact,
// without HTML escaping, so that clients and tests may compare it byte for
// byte.

// appendStatus appends the status JSON body for code and message.
func appendStatus(dst []byte, code, message string) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendJSONString(dst, code)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, message)
	return append(dst, '}')
}

// parseStatus reads a status body back. Unknown keys are ignored and a
// missing or null key reads as empty, as encoding/json would; a body that is
// not a JSON object, or a code or message that is not a string, is
// bad_system_frame: a route 0 frame whose body is not what route 0 means.
func parseStatus(body []byte) (code, message string, err error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return "", "", protoErr(ReasonBadSystemFrame, "status body is not a JSON object: %q", prefix(body))
	}
	var ok bool
	if code, _, ok = jsonString(m["code"]); !ok {
		return "", "", protoErr(ReasonBadSystemFrame, "status \"code\" is not a string: %q", prefix(m["code"]))
	}
	if message, _, ok = jsonString(m["message"]); !ok {
		return "", "", protoErr(ReasonBadSystemFrame, "status \"message\" is not a string: %q", prefix(m["message"]))
	}
	return code, message, nil
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
