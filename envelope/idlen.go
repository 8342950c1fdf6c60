package envelope

import (
	"bufio"
	"encoding/binary"
	"slices"
)

// The idlen constants describe the default envelope (SPEC.md section 3).
// All integers are big-endian:
//
//	+----------+---------+----------------+-----------------+--------+
//	| length   | version | route_id       | request_id      | body   |
//	| u32      | u8 = 1  | u24            | u32             | bytes  |
//	+----------+---------+----------------+-----------------+--------+
//	length = 8 + len(body)
//
// The kind is implied by the ids: route_id 0 is the system route (heartbeat,
// error, notice, and a client's deadline, which carries a request_id),
// request_id 0 means no answer is expected.
const (
	// IdlenHeaderSize is the idlen header after the length: version,
	// route_id and request_id.
	IdlenHeaderSize = 8
	// MaxIdlenRouteID is the largest u24 route_id.
	MaxIdlenRouteID = 1<<24 - 1
	// MaxIdlenRequestID is the largest u32 request_id.
	MaxIdlenRequestID = 1<<32 - 1
)

// idlenHeader is the 8-byte idlen header, kept in an array so that decoding
// reads it onto the stack.
type idlenHeader [IdlenHeaderSize]byte

// version returns the version byte.
func (h *idlenHeader) version() uint8 { return h[0] }

// routeID returns the u24 route_id.
func (h *idlenHeader) routeID() uint32 {
	return uint32(h[1])<<16 | uint32(h[2])<<8 | uint32(h[3])
}

// requestID returns the u32 request_id.
func (h *idlenHeader) requestID() uint32 { return binary.BigEndian.Uint32(h[4:]) }

// appendIdlenHeader appends a version 1 header with the given ids, which
// the caller has range-checked.
func appendIdlenHeader(dst []byte, routeID, requestID uint32) []byte {
	return append(dst, Version, byte(routeID>>16), byte(routeID>>8), byte(routeID),
		byte(requestID>>24), byte(requestID>>16), byte(requestID>>8), byte(requestID))
}

// idlenFramer is the idlen Framer for one side.
type idlenFramer struct {
	side     Side
	maxBytes int
}

var _ Framer = (*idlenFramer)(nil)

// Name returns "idlen".
func (c *idlenFramer) Name() string { return NameIdlen }

// Text reports false: idlen messages are binary.
func (c *idlenFramer) Text() bool { return false }

// Legacy reports false: the route is in the header.
func (c *idlenFramer) Legacy() bool { return false }

// MaxFrameBytes returns the frame cap.
func (c *idlenFramer) MaxFrameBytes() int { return c.maxBytes }

// MaxRouteID returns the largest u24.
func (c *idlenFramer) MaxRouteID() uint32 { return MaxIdlenRouteID }

// Buffered reports whether r holds the next frame whole (Framer).
func (c *idlenFramer) Buffered(r *bufio.Reader) bool {
	return lengthBuffered(r, IdlenHeaderSize, c.maxBytes)
}

// ReadFrame reads one length-prefixed idlen frame. Everything that the
// header alone decides (version, route 0 misuse) is checked before the body
// is read or allocated.
func (c *idlenFramer) ReadFrame(r *bufio.Reader, f *Frame) error {
	*f = Frame{}
	n, err := readLength(r, IdlenHeaderSize, c.maxBytes)
	if err != nil {
		return err
	}
	var h idlenHeader
	if err := readFixed(r, h[:]); err != nil {
		return err
	}
	kind, err := c.classify(&h, n-IdlenHeaderSize)
	if err != nil {
		return err
	}
	body, err := readBody(r, n-IdlenHeaderSize)
	if err != nil {
		return err
	}
	return headerFrame(f, kind, h.routeID(), uint64(h.requestID()), body, true)
}

// DecodeMessage decodes an idlen frame without its length prefix.
func (c *idlenFramer) DecodeMessage(msg []byte, f *Frame) error {
	*f = Frame{}
	if err := checkMessage(msg, IdlenHeaderSize, c.maxBytes); err != nil {
		return err
	}
	var h idlenHeader
	copy(h[:], msg)
	body := msg[IdlenHeaderSize:]
	kind, err := c.classify(&h, len(body))
	if err != nil {
		return err
	}
	return headerFrame(f, kind, h.routeID(), uint64(h.requestID()), body, false)
}

// classify derives the kind from the header and the body's length, applying
// SPEC.md's tables for the side's direction.
func (c *idlenFramer) classify(h *idlenHeader, bodyLen int) (Kind, error) {
	if v := h.version(); v != Version {
		return 0, protoErr(ReasonBadVersion, "idlen version %d", v)
	}
	route, rid := h.routeID(), h.requestID()
	if c.side == FromClient {
		switch {
		case route != 0 && rid != 0:
			return Request, nil
		case route != 0:
			return Notify, nil
		case rid == 0:
			// With a body, a resume (headerFrame checks it is one).
			return Heartbeat, nil
		case bodyLen > 0 && bodyLen <= maxDeadlineBody:
			// The declared deadline of request rid (headerFrame checks
			// the body is one).
			return Deadline, nil
		default:
			return 0, protoErr(ReasonBadSystemFrame, "route_id 0 with request_id %d and a %d-byte body", rid, bodyLen)
		}
	}
	switch {
	case route != 0 && rid != 0:
		return Response, nil
	case route != 0:
		return Push, nil
	case rid != 0:
		return Error, nil
	case bodyLen != 0:
		return Notice, nil
	default:
		return Heartbeat, nil
	}
}

// FrameSize is the length of f's idlen frame without its length prefix:
// the value its length field holds.
func (c *idlenFramer) FrameSize(f *Frame) int { return IdlenHeaderSize + headerBodySize(f) }

// AppendFrame appends the length-prefixed idlen frame.
func (c *idlenFramer) AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	dst, start := beginLength(dst, IdlenHeaderSize+headerBodySize(f))
	out, err := c.AppendMessage(dst, f)
	if err != nil {
		return dst[:start], err
	}
	return endLength(out, start)
}

// AppendMessage appends the idlen frame without its length prefix. It
// refuses a frame that the peer would decode as another kind (a Response
// without a request_id reads as a Push) or whose ids overflow the header.
func (c *idlenFramer) AppendMessage(dst []byte, f *Frame) ([]byte, error) {
	route, rid, err := idlenIDs(f)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst, IdlenHeaderSize+headerBodySize(f))
	dst = appendIdlenHeader(dst, route, rid)
	return appendHeaderBody(dst, f), nil
}

// idlenIDs returns the header ids that encode f, after checking that they
// fit and that they say f's kind.
func idlenIDs(f *Frame) (route, rid uint32, err error) {
	needRoute := func() error {
		if f.RouteID == 0 || f.RouteID > MaxIdlenRouteID {
			return invalid(NameIdlen, f, "route_id %d outside 1..%d", f.RouteID, MaxIdlenRouteID)
		}
		return nil
	}
	needRequest := func() error {
		if f.RequestID == 0 || f.RequestID > MaxIdlenRequestID {
			return invalid(NameIdlen, f, "request_id %d outside 1..%d", f.RequestID, uint64(MaxIdlenRequestID))
		}
		return nil
	}
	switch f.Kind {
	case Request, Response:
		if err := needRoute(); err != nil {
			return 0, 0, err
		}
		if err := needRequest(); err != nil {
			return 0, 0, err
		}
		return f.RouteID, uint32(f.RequestID), nil
	case Notify, Push:
		return f.RouteID, 0, needRoute()
	case Error:
		// An idlen error is on route 0: the request_id alone pairs it.
		return 0, uint32(f.RequestID), needRequest()
	case Heartbeat, Notice:
		return 0, 0, nil
	case Deadline:
		// On route 0 with the request_id of the request it precedes.
		return 0, uint32(f.RequestID), needRequest()
	default:
		return 0, 0, invalid(NameIdlen, f, "unknown kind")
	}
}
