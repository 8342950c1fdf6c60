package gateway

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
)

// frameWatch is the plaintext stream under a ws listener's connection
// (above TLS), read by the HTTP server and, after the upgrade, by the
// WebSocket library. Once the upgrade is done it reads the header of
// every frame the client sends, and stops the connection as soon as a
// data message's announced length passes max_frame_bytes (SPEC §3): the
// WebSocket library would only see the limit once that many bytes had
// trickled in. It stops it too at a header RFC 6455 forbids a client
// (unmasked, a control frame fragmented or over 125 bytes, a reserved
// opcode or RSV bit, a fragment out of order), so that the gateway
// closes with 1002 and counts the protocol error, where the library's
// own error would be one the gateway cannot tell from a socket's. It
// only reads what passes through; it holds nothing but, until watch,
// the bytes the HTTP server read past the upgrade request (early).
type frameWatch struct {
	net.Conn
	limit int64
	on    atomic.Bool  // set at the upgrade: the bytes from then on are frames
	bad   atomic.Int32 // the violation that stopped the reads (a watchFault), 0 while none

	// Before the upgrade the HTTP server reads the request, and it may
	// read past it: its background read (which watches for the client
	// leaving while the handler runs) takes one byte, and a client that
	// sends its first frame at once may land more in the server's buffer.
	// The WebSocket library gets those bytes from that buffer, not
	// through Read, so watching would begin in the middle of a frame.
	// early holds them, from the hijack (hijackWatch) to watch, which
	// scans them first. It stays nil for a client that waits for the
	// upgrade's answer.
	early []byte

	// The parse, touched by the reading goroutine only.
	hdr     [14]byte
	hdrLen  int
	hdrNeed int
	skip    int64 // payload bytes of the current frame still to pass
	msgLen  int64 // the data message so far, over its fragments
	frag    bool  // a data message's first fragment came, its last not yet
}

// errFrameTooLarge is what a read returns once a message announced more
// than max_frame_bytes.
var errFrameTooLarge = errors.New("websocket message announces more than max_frame_bytes")

// errBadFrame is what a read returns once a frame header broke RFC 6455.
var errBadFrame = errors.New("websocket frame header a client may not send")

// watchFault is what scan found wrong; the zero value is nothing.
type watchFault int32

const (
	faultNone     watchFault = iota
	faultTooLarge            // a data message announced more than the limit
	faultUnmasked            // RFC 6455 §5.1: a client masks every frame
	faultControl             // §5.5: a control frame is unfragmented and at most 125 bytes
	faultReserved            // §5.2: opcodes 3-7 and 11-15, and the RSV bits of no extension
	faultFragment            // §5.4: a continuation with no message open, or a message inside one
)

func (f watchFault) String() string {
	switch f {
	case faultTooLarge:
		return "a message above max_frame_bytes"
	case faultUnmasked:
		return "an unmasked frame"
	case faultControl:
		return "a fragmented or oversized control frame"
	case faultReserved:
		return "a reserved opcode or RSV bit"
	case faultFragment:
		return "a fragment out of order"
	default:
		return "no fault"
	}
}

func (f watchFault) err() error {
	if f == faultTooLarge {
		return errFrameTooLarge
	}
	return errBadFrame
}

// watch starts reading frame headers, from the first byte after the
// upgrade request: early, then what Read passes. No read is in progress
// when it is called: the upgrade has just been answered and the
// connection not yet served.
func (w *frameWatch) watch() {
	early := w.early
	w.early = nil
	if len(early) > 0 {
		// The library reads these from the HTTP server's buffer, not
		// through Read: a fault among them stops the read after them.
		f, _ := w.scan(early)
		w.bad.Store(int32(f))
	}
	w.on.Store(true)
}

// hijackWatch is the ResponseWriter the WebSocket library upgrades
// through. Its Hijack hands the watch the bytes the HTTP server had read
// past the upgrade request, its buffer's, which the library parses
// first: the watch's early bytes, exactly.
type hijackWatch struct {
	http.ResponseWriter
	w *frameWatch
}

// Hijack takes the connection from the HTTP server, as the library asks.
func (h hijackWatch) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err == nil {
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			h.w.early = slices.Clone(b)
		}
	}
	return c, brw, err
}

// fault is the violation that stopped the reads, faultNone while none has.
func (w *frameWatch) fault() watchFault { return watchFault(w.bad.Load()) }

// Read passes bytes through, parsing frame headers once watching. The
// bytes before a faulty header still reach the library, so the frames a
// client sent before it are served however TCP cut the stream; the read
// after them fails.
func (w *frameWatch) Read(p []byte) (int, error) {
	if f := w.fault(); f != faultNone {
		return 0, f.err()
	}
	n, err := w.Conn.Read(p)
	if n > 0 && w.on.Load() {
		if f, at := w.scan(p[:n]); f != faultNone {
			w.bad.Store(int32(f))
			if at > 0 {
				return at, nil
			}
			return 0, f.err()
		}
	}
	return n, err
}

// scan follows RFC 6455 frames through b and reports the first fault: a
// data message's length (the sum of its fragments' announced lengths)
// past the limit, or a header a client may not send. at is where in b
// the faulty header begins (0 when it began in an earlier b).
func (w *frameWatch) scan(b []byte) (f watchFault, at int) {
	start := 0 // where in b the header being read began
	for i := 0; i < len(b); {
		if w.skip > 0 {
			k := min(int64(len(b)-i), w.skip)
			w.skip -= k
			i += int(k)
			continue
		}
		if w.hdrLen == 0 {
			start = i
		}
		w.hdr[w.hdrLen] = b[i]
		w.hdrLen++
		i++
		if w.hdrLen == 2 {
			if f := headerFault(w.hdr[0], w.hdr[1], w.frag); f != faultNone {
				return f, start
			}
			w.hdrNeed = 2
			switch w.hdr[1] & 0x7f {
			case 126:
				w.hdrNeed += 2
			case 127:
				w.hdrNeed += 8
			}
			w.hdrNeed += 4 // the mask a client's frame carries
		}
		if w.hdrLen < 2 || w.hdrLen < w.hdrNeed {
			continue
		}
		var length int64
		switch n := w.hdr[1] & 0x7f; n {
		case 126:
			length = int64(binary.BigEndian.Uint16(w.hdr[2:]))
		case 127:
			u := binary.BigEndian.Uint64(w.hdr[2:])
			if u > uint64(w.limit) {
				return faultTooLarge, start
			}
			length = int64(u)
		default:
			length = int64(n)
		}
		w.hdrLen = 0
		if opcode := w.hdr[0] & 0x0f; opcode < 8 { // data or continuation
			if opcode != 0 {
				w.msgLen = 0
			}
			w.msgLen += length
			if w.msgLen > w.limit {
				return faultTooLarge, start
			}
			fin := w.hdr[0]&0x80 != 0
			if fin {
				w.msgLen = 0
			}
			w.frag = !fin
		}
		w.skip = length
	}
	return faultNone, 0
}

// headerFault judges a client frame's first two header bytes; frag says
// a fragmented data message is open.
func headerFault(b0, b1 byte, frag bool) watchFault {
	opcode := b0 & 0x0f
	switch {
	case b1&0x80 == 0:
		return faultUnmasked
	case b0&0x70 != 0: // no extension is negotiated: compression is off
		return faultReserved
	case opcode >= 3 && opcode <= 7 || opcode >= 11:
		return faultReserved
	case opcode >= 8 && (b0&0x80 == 0 || b1&0x7f > 125):
		return faultControl
	case opcode == 0 && !frag, (opcode == 1 || opcode == 2) && frag:
		return faultFragment
	}
	return faultNone
}
