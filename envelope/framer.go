// Package envelope is the wire framing between game clients and the gateway
// (SPEC.md section 3): the Frame every envelope decodes to, and one Framer per
// envelope — idlen, typelen, lenprefix and delimiter.
//
// A Framer has two layers. DecodeMessage and AppendMessage handle one frame
// without its stream framing (no u32 length prefix, no trailing newline):
// that is what a WebSocket message carries. ReadFrame and AppendFrame add
// the stream framing on top, for TCP. Limits are checked before anything of
// the claimed size is allocated, and every violation is a *ProtocolError
// whose Reason is a label of shield_protocol_errors_total.
//
// Framers hold no per-connection state and are safe for concurrent use; a
// connection's state is its bufio.Reader.
package envelope

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
)

// Version is the only version byte the header envelopes accept.
const Version = 1

// LengthSize is the size of the u32 big-endian length that prefixes idlen,
// typelen and lenprefix frames on a stream.
const LengthSize = 4

// Envelope names, as network.listeners[].protocol.envelope spells them.
const (
	NameIdlen     = "idlen"
	NameTypelen   = "typelen"
	NameLenprefix = "lenprefix"
	NameDelimiter = "delimiter"
)

// Side says whose frames a Framer decodes. The same bytes mean different
// kinds in each direction (an idlen frame on route 0 with a request_id is a
// protocol error from a client and an Error from the gateway), and a peer
// may only send its own direction's kinds. Encoding does not depend on Side:
// any Framer encodes every kind.
type Side uint8

const (
	// FromClient decodes what a client sends: the gateway's side. Only
	// Request, Notify and Heartbeat are valid.
	FromClient Side = iota + 1
	// FromServer decodes what the gateway sends: a Go client's side. Only
	// Response, Push, Error, Notice and Heartbeat are valid.
	FromServer
)

// String returns "client" or "server".
func (s Side) String() string {
	switch s {
	case FromClient:
		return "client"
	case FromServer:
		return "server"
	default:
		return fmt.Sprintf("side(%d)", uint8(s))
	}
}

// Framer reads and writes the frames of one envelope in one direction.
type Framer interface {
	// Name returns the envelope's name, e.g. "idlen".
	Name() string
	// ReadFrame reads exactly one frame from r into *f, which it sets
	// whole: on error *f is the zero Frame. (A pointer rather than a
	// result, because a Frame is fourteen words: returned by value it is
	// copied at every layer of a read, on the hottest path there is.) It
	// returns io.EOF only at a clean frame boundary, a *ProtocolError for a
	// violation (truncated for EOF inside a frame), and r's other errors
	// (deadlines, closed connections) as they are, so errors.Is sees them.
	// After any error but io.EOF the connection is to be closed: r's
	// position is unspecified.
	ReadFrame(r *bufio.Reader, f *Frame) error
	// Buffered reports whether r's buffer holds the next frame whole, so
	// that ReadFrame reads nothing more from r's source: a reader may then
	// decode it without waiting, and needs no read deadline for it. A frame
	// whose first bytes already break a limit counts (ReadFrame fails
	// without reading). False is always safe: ReadFrame may read.
	Buffered(r *bufio.Reader) bool
	// AppendFrame appends f's wire bytes, stream framing included, to dst.
	// On error it returns dst unchanged and an error wrapping
	// ErrInvalidFrame. It allocates only to grow dst.
	AppendFrame(dst []byte, f *Frame) ([]byte, error)
	// DecodeMessage decodes one frame without stream framing, as a
	// WebSocket message carries it, into *f with ReadFrame's rules. The
	// Frame never aliases msg, so the caller may reuse msg at once.
	DecodeMessage(msg []byte, f *Frame) error
	// AppendMessage appends one frame without stream framing to dst, with
	// AppendFrame's error and allocation rules.
	AppendMessage(dst []byte, f *Frame) ([]byte, error)
	// FrameSize is the length AppendMessage gives f: what max_frame_bytes
	// caps (SPEC §3, §7). A frame that cannot be encoded has size 0.
	FrameSize(f *Frame) int
	// Text reports whether a message is text (delimiter: a WebSocket text
	// message) rather than binary.
	Text() bool
	// Legacy reports whether routes travel in a JSON wrapper (lenprefix,
	// delimiter), where a client may name a route and only the json body
	// codec fits.
	Legacy() bool
	// MaxRouteID is the largest route_id the envelope can carry.
	MaxRouteID() uint32
	// MaxFrameBytes is the cap New was given.
	MaxFrameBytes() int
}

// Read is ReadFrame for a caller off the hot path (a client, a test) that
// would rather have the Frame as a value.
func Read(fr Framer, r *bufio.Reader) (Frame, error) {
	var f Frame
	err := fr.ReadFrame(r, &f)
	return f, err
}

// Decode is DecodeMessage in the same form as Read.
func Decode(fr Framer, msg []byte) (Frame, error) {
	var f Frame
	err := fr.DecodeMessage(msg, &f)
	return f, err
}

// New returns the named envelope's Framer for decoding side's frames, with
// maxFrameBytes capping a frame's header plus body: the u32 length of idlen,
// typelen and lenprefix, a delimiter line without its newline, a WebSocket
// message. It must be at least the envelope's header size and fit a u32.
func New(name string, side Side, maxFrameBytes int) (Framer, error) {
	if side != FromClient && side != FromServer {
		return nil, fmt.Errorf("envelope: %s: invalid side %v", name, side)
	}
	var c Framer
	minSize := 1
	switch name {
	case NameIdlen:
		c, minSize = &idlenFramer{side: side, maxBytes: maxFrameBytes}, IdlenHeaderSize
	case NameTypelen:
		c, minSize = &typelenFramer{side: side, maxBytes: maxFrameBytes}, TypelenHeaderSize
	case NameLenprefix:
		c = &lenprefixFramer{side: side, maxBytes: maxFrameBytes}
	case NameDelimiter:
		c = &delimiterFramer{side: side, maxBytes: maxFrameBytes}
	default:
		return nil, fmt.Errorf("envelope: %w %q (want idlen, typelen, lenprefix or delimiter)", ErrUnknownEnvelope, name)
	}
	if maxFrameBytes < minSize || uint64(maxFrameBytes) > math.MaxUint32 {
		return nil, fmt.Errorf("envelope: %s: max_frame_bytes %d outside %d..%d", name, maxFrameBytes, minSize, uint64(math.MaxUint32))
	}
	return c, nil
}

// readLength reads a stream frame's u32 length and checks it against
// [minLen, maxLen] before anything of that size is read or allocated. A clean EOF
// before the first byte is io.EOF; EOF after it is truncated.
func readLength(r *bufio.Reader, minLen, maxLen int) (int, error) {
	p, err := r.Peek(LengthSize)
	if len(p) < LengthSize {
		if err == io.EOF {
			if len(p) == 0 {
				return 0, io.EOF
			}
			return 0, protoErr(ReasonTruncated, "EOF after %d of %d length bytes", len(p), LengthSize)
		}
		return 0, err
	}
	n := binary.BigEndian.Uint32(p)
	_, _ = r.Discard(LengthSize) // cannot fail: the bytes are buffered
	switch {
	case uint64(n) > uint64(maxLen):
		return 0, protoErr(ReasonTooLarge, "length %d above max_frame_bytes %d", n, maxLen)
	case int64(n) < int64(minLen):
		return 0, protoErr(ReasonTooShort, "length %d below %d", n, minLen)
	}
	return int(n), nil
}

// lengthBuffered is Buffered for the envelopes with a u32 length prefix:
// the length is buffered and breaks [minLen, maxLen], or the whole frame
// is buffered.
func lengthBuffered(r *bufio.Reader, minLen, maxLen int) bool {
	have := r.Buffered()
	if have < LengthSize {
		return false
	}
	p, _ := r.Peek(LengthSize) // buffered: it does not read
	n := binary.BigEndian.Uint32(p)
	if uint64(n) > uint64(maxLen) || int64(n) < int64(minLen) {
		return true
	}
	return have-LengthSize >= int(n)
}

// readFixed fills dst (a caller's stack array: Peek and copy keep it from
// escaping, where io.ReadFull through an interface would not) with the next
// len(dst) bytes, which must be inside a frame. len(dst) must not exceed the
// reader's buffer size (16 bytes at least); headers here are at most 12.
func readFixed(r *bufio.Reader, dst []byte) error {
	p, err := r.Peek(len(dst))
	if len(p) < len(dst) {
		if err == io.EOF {
			return protoErr(ReasonTruncated, "EOF after %d of %d header bytes", len(p), len(dst))
		}
		return err
	}
	copy(dst, p)
	_, _ = r.Discard(len(dst))
	return nil
}

// readBody reads the n-byte body of a frame whose length passed
// readLength into one allocation of exactly n bytes that the Frame then
// owns. The claim alone costs nothing (SPEC §3): the bytes are waited for
// in r's own buffer and moved, as each bufferful arrives, into pooled
// chunks, so a client that announces 64 KiB and sends 12 bytes holds no
// more than r's buffer; the body is allocated once complete, when it is
// handed on, and the chunks go back to the pool.
func readBody(r *bufio.Reader, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	step := min(r.Size(), bodyChunk)
	if n <= step {
		p, err := r.Peek(n)
		if len(p) < n {
			return nil, truncatedBody(err, len(p), n)
		}
		body := make([]byte, n)
		copy(body, p)
		_, _ = r.Discard(n)
		return body, nil
	}
	var chunks []*[bodyChunk]byte
	defer func() {
		for _, c := range chunks {
			chunkPool.Put(c)
		}
	}()
	for got := 0; got < n; {
		// Wait for a whole piece in r's buffer before taking memory
		// for it.
		off := got % bodyChunk
		want := min(step, n-got, bodyChunk-off)
		p, err := r.Peek(want)
		if len(p) < want {
			return nil, truncatedBody(err, got+len(p), n)
		}
		if off == 0 {
			chunks = append(chunks, chunkPool.Get().(*[bodyChunk]byte))
		}
		copy(chunks[len(chunks)-1][off:], p)
		_, _ = r.Discard(want)
		got += want
	}
	body := make([]byte, 0, n)
	for i, c := range chunks {
		body = append(body, c[:min(bodyChunk, n-i*bodyChunk)]...)
	}
	return body, nil
}

// bodyChunk is the unit in which a long body is gathered.
const bodyChunk = 4 << 10

// chunkPool holds the chunks of bodies being gathered, shared by every
// connection.
var chunkPool = sync.Pool{New: func() any { return new([bodyChunk]byte) }}

// truncatedBody is the error of a body read that stopped after got of n
// bytes: truncated at EOF, the reader's own error otherwise.
func truncatedBody(err error, got, n int) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return protoErr(ReasonTruncated, "EOF after %d of %d body bytes", got, n)
	}
	return err
}

// checkMessage applies the frame limits to a WebSocket message, whose size
// plays the part of the stream's length.
func checkMessage(msg []byte, minLen, maxLen int) error {
	switch {
	case len(msg) > maxLen:
		return protoErr(ReasonTooLarge, "message of %d bytes above max_frame_bytes %d", len(msg), maxLen)
	case len(msg) < minLen:
		return protoErr(ReasonTooShort, "message of %d bytes below %d", len(msg), minLen)
	}
	return nil
}

// beginLength reserves the u32 length prefix of a stream frame at the end of
// dst, after growing dst by size more bytes than that so the frame is
// appended with at most one reallocation.
func beginLength(dst []byte, size int) ([]byte, int) {
	start := len(dst)
	return append(slices.Grow(dst, LengthSize+size), 0, 0, 0, 0), start
}

// endLength writes the length of the frame appended since start.
func endLength(dst []byte, start int) ([]byte, error) {
	n := len(dst) - start - LengthSize
	if uint64(n) > math.MaxUint32 {
		return dst[:start], fmt.Errorf("envelope: frame of %d bytes does not fit a u32 length: %w", n, ErrInvalidFrame)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}
