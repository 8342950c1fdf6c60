package envelope

import (
	"bufio"
	"io"
	"math"
)

// lenprefix is a legacy envelope (SPEC.md section 3): a u32 big-endian
// length, then that many bytes of one JSON wrapper (see legacy.go).
//
//	+----------+----------------------+
//	| length   | wrapper              |
//	| u32      | JSON object          |
//	+----------+----------------------+
//	length = len(wrapper), 1..max_frame_bytes
//
// A length of 0 is too_short: there is no header, but an empty wrapper is
// never a frame.

// lenprefixFramer is the lenprefix Framer for one side.
type lenprefixFramer struct {
	side     Side
	maxBytes int
}

var _ Framer = (*lenprefixFramer)(nil)

// Name returns "lenprefix".
func (c *lenprefixFramer) Name() string { return NameLenprefix }

// Text reports false: lenprefix messages travel as binary WebSocket
// messages, as SPEC.md says.
func (c *lenprefixFramer) Text() bool { return false }

// Legacy reports true: routes travel in the wrapper.
func (c *lenprefixFramer) Legacy() bool { return true }

// MaxFrameBytes returns the frame cap.
func (c *lenprefixFramer) MaxFrameBytes() int { return c.maxBytes }

// MaxRouteID returns the largest route_id a wrapper may hold.
func (c *lenprefixFramer) MaxRouteID() uint32 { return math.MaxUint32 }

// Buffered reports whether r holds the next frame whole (Framer).
func (c *lenprefixFramer) Buffered(r *bufio.Reader) bool { return lengthBuffered(r, 1, c.maxBytes) }

// ReadFrame reads one length-prefixed wrapper. A wrapper that fits r's
// buffer is parsed where it lies, with no copy; a longer one is read into a
// buffer of exactly its length (bounded by max_frame_bytes).
func (c *lenprefixFramer) ReadFrame(r *bufio.Reader, f *Frame) error {
	*f = Frame{}
	n, err := readLength(r, 1, c.maxBytes)
	if err != nil {
		return err
	}
	if n <= r.Size() {
		p, err := r.Peek(n)
		if len(p) < n {
			if err == io.EOF {
				return protoErr(ReasonTruncated, "EOF after %d of %d wrapper bytes", len(p), n)
			}
			return err
		}
		err = decodeWrapper(p, c.side, f)
		_, _ = r.Discard(n)
		return err
	}
	buf, err := readBody(r, n)
	if err != nil {
		return err
	}
	return decodeWrapper(buf, c.side, f)
}

// DecodeMessage decodes one wrapper without its length prefix.
func (c *lenprefixFramer) DecodeMessage(msg []byte, f *Frame) error {
	*f = Frame{}
	if err := checkMessage(msg, 1, c.maxBytes); err != nil {
		return err
	}
	return decodeWrapper(msg, c.side, f)
}

// FrameSize is the length of f's wrapper, what max_frame_bytes caps.
func (c *lenprefixFramer) FrameSize(f *Frame) int { return legacySize(f, NameLenprefix, false) }

// AppendFrame appends the length-prefixed wrapper.
func (c *lenprefixFramer) AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	dst, start := beginLength(dst, wrapperSize(f))
	out, err := c.AppendMessage(dst, f)
	if err != nil {
		return dst[:start], err
	}
	return endLength(out, start)
}

// AppendMessage appends the wrapper alone.
func (c *lenprefixFramer) AppendMessage(dst []byte, f *Frame) ([]byte, error) {
	return appendWrapper(dst, f, NameLenprefix, false)
}
