package envelope

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
)

// delimiter is a legacy envelope (SPEC.md section 3): one JSON wrapper (see
// legacy.go) per line, ended by '\n'.
//
//	{"type":"heartbeat"}\n
//
// max_frame_bytes caps a line without its '\n'. A '\r' before the '\n' is
// JSON whitespace and so accepted (and counted). An empty line is not a JSON
// object: bad_wrapper, like any other non-object.

// delimiterFramer is the delimiter Framer for one side.
type delimiterFramer struct {
	side     Side
	maxBytes int
}

var _ Framer = (*delimiterFramer)(nil)

// Name returns "delimiter".
func (c *delimiterFramer) Name() string { return NameDelimiter }

// Text reports true: over WebSocket a wrapper is a text message.
func (c *delimiterFramer) Text() bool { return true }

// Legacy reports true: routes travel in the wrapper.
func (c *delimiterFramer) Legacy() bool { return true }

// MaxFrameBytes returns the frame cap.
func (c *delimiterFramer) MaxFrameBytes() int { return c.maxBytes }

// MaxRouteID returns the largest route_id a wrapper may hold.
func (c *delimiterFramer) MaxRouteID() uint32 { return math.MaxUint32 }

// Buffered reports whether r holds the next line whole (Framer).
func (c *delimiterFramer) Buffered(r *bufio.Reader) bool {
	p, _ := r.Peek(r.Buffered()) // buffered: it does not read
	return bytes.IndexByte(p, '\n') >= 0
}

// ReadFrame reads one line. A line that fits r's buffer is parsed where it
// lies; a longer one is gathered chunk by chunk, and the read stops with
// too_large as soon as the line passes max_frame_bytes, so a client cannot
// make the gateway buffer more than that (ReadBytes would grow without
// bound).
func (c *delimiterFramer) ReadFrame(r *bufio.Reader, f *Frame) error {
	*f = Frame{}
	chunk, err := r.ReadSlice('\n')
	if err == nil {
		line := chunk[:len(chunk)-1]
		if len(line) > c.maxBytes {
			return c.tooLarge(len(line))
		}
		return decodeWrapper(line, c.side, f)
	}
	var line []byte
	for {
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
			if len(line)+len(chunk) > c.maxBytes {
				return c.tooLarge(len(line) + len(chunk))
			}
			return decodeWrapper(append(c.grow(line, len(chunk)), chunk...), c.side, f)
		case len(line)+len(chunk) > c.maxBytes:
			// Whatever else happened, this line was already too long.
			return c.tooLarge(len(line) + len(chunk))
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(c.grow(line, len(chunk)), chunk...)
		case err == io.EOF:
			if len(line)+len(chunk) == 0 {
				return io.EOF
			}
			return protoErr(ReasonTruncated, "EOF after %d bytes of a line", len(line)+len(chunk))
		default:
			return err
		}
		chunk, err = r.ReadSlice('\n')
	}
}

// grow makes room for n more bytes of a line already checked to stay within
// max_frame_bytes, doubling as append does but never past the limit, so the
// buffer of a line is never larger than max_frame_bytes.
func (c *delimiterFramer) grow(line []byte, n int) []byte {
	need := len(line) + n
	if need <= cap(line) {
		return line
	}
	return append(make([]byte, 0, min(max(2*cap(line), need), c.maxBytes)), line...)
}

// tooLarge reports a line of at least n bytes.
func (c *delimiterFramer) tooLarge(n int) error {
	return protoErr(ReasonTooLarge, "line of %d+ bytes above max_frame_bytes %d", n, c.maxBytes)
}

// DecodeMessage decodes one wrapper without its newline, as a WebSocket text
// message carries it.
func (c *delimiterFramer) DecodeMessage(msg []byte, f *Frame) error {
	*f = Frame{}
	if len(msg) > c.maxBytes {
		return protoErr(ReasonTooLarge, "message of %d bytes above max_frame_bytes %d", len(msg), c.maxBytes)
	}
	return decodeWrapper(msg, c.side, f)
}

// FrameSize is the length of f's wrapper, what max_frame_bytes caps.
func (c *delimiterFramer) FrameSize(f *Frame) int { return legacySize(f, NameDelimiter, true) }

// AppendFrame appends the wrapper and its newline.
func (c *delimiterFramer) AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	out, err := c.AppendMessage(dst, f)
	if err != nil {
		return dst, err
	}
	return append(out, '\n'), nil
}

// AppendMessage appends the wrapper, on one line, without the newline.
func (c *delimiterFramer) AppendMessage(dst []byte, f *Frame) ([]byte, error) {
	return appendWrapper(dst, f, NameDelimiter, true)
}
