package envelope

import (
	"bufio"
	"encoding/binary"
	"slices"
)

// The typelen constants describe the envelope that carries the kind
// explicitly (SPEC.md section 3). All integers are big-endian:
//
//	+----------+---------+--------+-----------+-----------------+--------+
//	| length   | version | type   | route_id  | request_id      | body   |
//	| u32      | u8 = 1  | u8     | u16       | u64             | bytes  |
//	+----------+---------+--------+-----------+-----------------+--------+
//	length = 12 + len(body)
//	type: 1 request, 2 response, 3 error, 4 push, 5 heartbeat, 6 notice, 7 notify,
//	      8 deadline (a client's, before its request)
//
// The type byte is a Kind as it is. Unlike idlen, an error keeps the
// request's route_id.
const (
	// TypelenHeaderSize is the typelen header after the length: version,
	// type, route_id and request_id.
	TypelenHeaderSize = 12
	// MaxTypelenRouteID is the largest u16 route_id; with typelen every
	// descriptor id must fit it.
	MaxTypelenRouteID = 1<<16 - 1
)

// typelenHeader is the 12-byte typelen header, kept in an array so that
// decoding reads it onto the stack.
type typelenHeader [TypelenHeaderSize]byte

// version returns the version byte.
func (h *typelenHeader) version() uint8 { return h[0] }

// kind returns the type byte, which may be outside the seven kinds.
func (h *typelenHeader) kind() Kind { return Kind(h[1]) }

// routeID returns the u16 route_id.
func (h *typelenHeader) routeID() uint32 { return uint32(binary.BigEndian.Uint16(h[2:])) }

// requestID returns the u64 request_id.
func (h *typelenHeader) requestID() uint64 { return binary.BigEndian.Uint64(h[4:]) }

// appendTypelenHeader appends a version 1 header, routeID already checked to
// fit 16 bits.
func appendTypelenHeader(dst []byte, kind Kind, routeID uint32, requestID uint64) []byte {
	dst = append(dst, Version, byte(kind), byte(routeID>>8), byte(routeID))
	return binary.BigEndian.AppendUint64(dst, requestID)
}

// typelenFramer is the typelen Framer for one side.
type typelenFramer struct {
	side     Side
	maxBytes int
}

var _ Framer = (*typelenFramer)(nil)

// Name returns "typelen".
func (c *typelenFramer) Name() string { return NameTypelen }

// Text reports false: typelen messages are binary.
func (c *typelenFramer) Text() bool { return false }

// Legacy reports false: the route is in the header.
func (c *typelenFramer) Legacy() bool { return false }

// MaxFrameBytes returns the frame cap.
func (c *typelenFramer) MaxFrameBytes() int { return c.maxBytes }

// MaxRouteID returns the largest u16.
func (c *typelenFramer) MaxRouteID() uint32 { return MaxTypelenRouteID }

// Buffered reports whether r holds the next frame whole (Framer).
func (c *typelenFramer) Buffered(r *bufio.Reader) bool {
	return lengthBuffered(r, TypelenHeaderSize, c.maxBytes)
}

// ReadFrame reads one length-prefixed typelen frame, checking the header
// before the body is read or allocated.
func (c *typelenFramer) ReadFrame(r *bufio.Reader, f *Frame) error {
	*f = Frame{}
	n, err := readLength(r, TypelenHeaderSize, c.maxBytes)
	if err != nil {
		return err
	}
	var h typelenHeader
	if err := readFixed(r, h[:]); err != nil {
		return err
	}
	if err := c.check(&h, n-TypelenHeaderSize); err != nil {
		return err
	}
	body, err := readBody(r, n-TypelenHeaderSize)
	if err != nil {
		return err
	}
	return headerFrame(f, h.kind(), h.routeID(), h.requestID(), body, true)
}

// DecodeMessage decodes a typelen frame without its length prefix.
func (c *typelenFramer) DecodeMessage(msg []byte, f *Frame) error {
	*f = Frame{}
	if err := checkMessage(msg, TypelenHeaderSize, c.maxBytes); err != nil {
		return err
	}
	var h typelenHeader
	copy(h[:], msg)
	body := msg[TypelenHeaderSize:]
	if err := c.check(&h, len(body)); err != nil {
		return err
	}
	return headerFrame(f, h.kind(), h.routeID(), h.requestID(), body, false)
}

// check validates the header against the side's direction. From a client,
// a type the client may not send is bad_type, and ids that contradict the
// type are bad_system_frame: a request without a request_id, a request or
// notify on route 0, a heartbeat off route 0 or with a body. A notify's or
// heartbeat's request_id is ignored, as SPEC.md says for notify. From the
// gateway the ids are taken as they are, since the type says everything.
func (c *typelenFramer) check(h *typelenHeader, bodyLen int) error {
	if v := h.version(); v != Version {
		return protoErr(ReasonBadVersion, "typelen version %d", v)
	}
	kind, route := h.kind(), h.routeID()
	if kind == Heartbeat {
		// From a client, a body makes it a resume (headerFrame checks).
		if route != 0 || bodyLen != 0 && c.side != FromClient {
			return protoErr(ReasonBadSystemFrame, "heartbeat with route_id %d and a %d-byte body", route, bodyLen)
		}
		return nil
	}
	if c.side == FromClient {
		switch kind {
		case Request:
			if route == 0 || h.requestID() == 0 {
				return protoErr(ReasonBadSystemFrame, "request with route_id %d and request_id %d", route, h.requestID())
			}
		case Notify:
			if route == 0 {
				return protoErr(ReasonBadSystemFrame, "notify on route_id 0")
			}
		case Deadline:
			// Off its one shape, type 8 is still a type a client may not
			// send (bad_type, as before there was a type 8); a body that is
			// not a deadline is bad_system_frame (headerFrame).
			if route != 0 || h.requestID() == 0 || bodyLen == 0 || bodyLen > maxDeadlineBody {
				return protoErr(ReasonBadType, "deadline with route_id %d, request_id %d and a %d-byte body", route, h.requestID(), bodyLen)
			}
		default:
			return protoErr(ReasonBadType, "typelen type %d from a client", uint8(kind))
		}
		return nil
	}
	switch kind {
	case Response, Push, Error, Notice:
		return nil
	default:
		return protoErr(ReasonBadType, "typelen type %d from the gateway", uint8(kind))
	}
}

// FrameSize is the length of f's typelen frame without its length
// prefix: the value its length field holds.
func (c *typelenFramer) FrameSize(f *Frame) int { return TypelenHeaderSize + headerBodySize(f) }

// AppendFrame appends the length-prefixed typelen frame.
func (c *typelenFramer) AppendFrame(dst []byte, f *Frame) ([]byte, error) {
	dst, start := beginLength(dst, TypelenHeaderSize+headerBodySize(f))
	out, err := c.AppendMessage(dst, f)
	if err != nil {
		return dst[:start], err
	}
	return endLength(out, start)
}

// AppendMessage appends the typelen frame without its length prefix. The
// ids a kind does not carry are written as 0; a Request or Notify must have
// what a client-side decoder demands, so that encoding never produces a
// frame the gateway would close the connection for.
func (c *typelenFramer) AppendMessage(dst []byte, f *Frame) ([]byte, error) {
	var route uint32
	var rid uint64
	switch f.Kind {
	case Request, Response, Error:
		route, rid = f.RouteID, f.RequestID
	case Notify, Push:
		route = f.RouteID
	case Heartbeat, Notice:
	case Deadline:
		rid = f.RequestID
	default:
		return dst, invalid(NameTypelen, f, "unknown kind")
	}
	switch {
	case route > MaxTypelenRouteID:
		return dst, invalid(NameTypelen, f, "route_id %d above %d", route, MaxTypelenRouteID)
	case (f.Kind == Request || f.Kind == Notify) && route == 0:
		return dst, invalid(NameTypelen, f, "route_id 0")
	case (f.Kind == Request || f.Kind == Deadline) && rid == 0:
		return dst, invalid(NameTypelen, f, "request_id 0")
	}
	dst = slices.Grow(dst, TypelenHeaderSize+headerBodySize(f))
	dst = appendTypelenHeader(dst, f.Kind, route, rid)
	return appendHeaderBody(dst, f), nil
}
