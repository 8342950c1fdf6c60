// Package tracing is Shield's OpenTelemetry tracing (docs/tracing.md): the
// only package that imports the SDK. The rest of the tree sees a Tracer,
// nil when tracing is off, whose Start returns a Span value; the span's
// identity crosses components and nodes as a Context, plain data.
package tracing

import (
	"encoding/hex"
)

// Context is a span's identity as plain data: what a message carries from
// the component that started a span to the one that starts its children
// (a ClientIngress to its VM, a Call to its callee, over NATS as the W3C
// traceparent text). The zero Context is no span.
type Context struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte // W3C trace-flags: bit 0 is "sampled"
}

// Valid reports whether c names a span: W3C forbids an all-zero trace id
// or parent id.
func (c Context) Valid() bool { return c.TraceID != [16]byte{} && c.SpanID != [8]byte{} }

// Sampled reports the sampled flag.
func (c Context) Sampled() bool { return c.Flags&1 != 0 }

// traceParentLen is the length of a version-00 traceparent.
const traceParentLen = 55

// MaxTraceParent bounds the traceparent a client may send (docs/tracing.md):
// a longer string is refused by the envelope before it is parsed.
const MaxTraceParent = traceParentLen

// TraceParent is c in W3C Trace Context's text form, version 00, or ""
// for the zero Context.
func (c Context) TraceParent() string {
	if !c.Valid() {
		return ""
	}
	var b [traceParentLen]byte
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], c.TraceID[:])
	b[35] = '-'
	hex.Encode(b[36:52], c.SpanID[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{c.Flags})
	return string(b[:])
}

// TraceIDString and SpanIDString are the ids as log lines carry them: lower-case hex.
func (c Context) TraceIDString() string { return hex.EncodeToString(c.TraceID[:]) }

// SpanIDString is the span id in lower-case hex.
func (c Context) SpanIDString() string { return hex.EncodeToString(c.SpanID[:]) }

// ParseTraceParent reads a W3C traceparent. It accepts version 00 exactly
// as W3C writes it (lower-case hex, 55 bytes) and a later version's first
// 55 bytes followed by "-" and more, as the recommendation asks; anything
// else, an all-zero id included, is not one (ok false), and the caller
// starts a trace of its own.
func ParseTraceParent(s string) (c Context, ok bool) {
	if len(s) < traceParentLen || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return Context{}, false
	}
	var ver [1]byte
	if !lowerHex(ver[:], s[0:2]) || ver[0] == 0xff {
		return Context{}, false
	}
	if (ver[0] == 0 && len(s) != traceParentLen) || (len(s) > traceParentLen && s[traceParentLen] != '-') {
		return Context{}, false
	}
	var flags [1]byte
	if !lowerHex(c.TraceID[:], s[3:35]) || !lowerHex(c.SpanID[:], s[36:52]) || !lowerHex(flags[:], s[53:55]) {
		return Context{}, false
	}
	c.Flags = flags[0]
	if !c.Valid() {
		return Context{}, false
	}
	return c, true
}

// lowerHex decodes src, lower-case hex only (W3C: "HEXDIGLC"), into dst.
func lowerHex(dst []byte, src string) bool {
	for i := 0; i < len(src); i++ {
		if c := src[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(src))
	return err == nil
}
