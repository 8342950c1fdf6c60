package gateway

import (
	"bufio"
	"crypto/tls"
	"net"
	"time"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// frameConn is one client connection seen as frames: everything the read
// and write loops know of their transport (SPEC §3, Transports). The read
// loop alone calls ReadFrame and SetReadDeadline; the write loop alone
// calls the write methods and Close (the connection's teardown also calls
// Close, after the write loop has ended).
//
// There are two: streamConn carries the envelope's bytes as they are, over
// TCP or TLS; wsConn carries one frame per WebSocket message.
type frameConn interface {
	// ReadFrame reads the next whole frame with the framer choose returns,
	// whose max_frame_bytes caps it (the listener's, or
	// session.auth_max_frame_bytes before login). choose is called once
	// the frame has begun to arrive, not before: a client that logs in and
	// waits for the answer sends its next frame to a bound session, and
	// must not be held to the cap of the unbound one the read began on.
	// It returns a *envelope.ProtocolError for a violation, io.EOF when
	// the peer ended the connection cleanly, and other errors (deadlines,
	// closed sockets) so that errors.Is sees them.
	ReadFrame(choose func() envelope.Framer) (envelope.Frame, error)
	// SetReadDeadline bounds the next ReadFrame: session.idle_timeout is a
	// deadline per frame, not per read.
	SetReadDeadline(t time.Time) error
	// SetWriteDeadline bounds the writes of one batch (session.write_timeout).
	SetWriteDeadline(t time.Time) error
	// WriteFrame adds f to the current batch. An error wrapping
	// envelope.ErrInvalidFrame means f cannot be put on this envelope: f
	// is dropped and the connection goes on. Any other error is the
	// connection's: it is to be closed.
	WriteFrame(f *envelope.Frame) error
	// BatchBytes is the size of the current batch, which the write loop
	// keeps near batchBytes so that each batch gets its own write_timeout.
	BatchBytes() int
	// Flush ends the batch: whatever WriteFrame buffered is written.
	Flush() error
	// Close ends the connection and wakes a blocked ReadFrame. r is why
	// the session ended: a transport that can say goodbye (a WebSocket
	// close frame, a TLS close_notify) does so unless r says the peer is
	// not reading. Close is idempotent.
	Close(r session.Reason)
	// RemoteAddr is the client's address.
	RemoteAddr() net.Addr
}

// batchBytes is how much the write loop puts in one batch: every frame
// queued when it wakes, up to about this many bytes.
const batchBytes = 64 << 10

// readBufferSize is enough for typical game frames in one read while
// keeping an idle session small.
const readBufferSize = 4096

// streamConn is a TCP or TLS connection carrying the envelope's bytes as
// they are: frames are read through a bufio.Reader with the codec's
// ReadFrame and written in batches, every frame of a batch appended to one
// buffer and written with one Write.
type streamConn struct {
	nc    net.Conn // *net.TCPConn or *tls.Conn
	br    *bufio.Reader
	codec envelope.Framer
	wbuf  []byte // the current batch, encoded

	// closed makes Close idempotent. Only the write loop and, after it
	// ended, the connection's teardown call Close, so it needs no lock.
	closed bool
}

var _ frameConn = (*streamConn)(nil)

func newStreamConn(nc net.Conn, codec envelope.Framer) *streamConn {
	return &streamConn{nc: nc, br: bufio.NewReaderSize(nc, readBufferSize), codec: codec}
}

// ReadFrame reads one frame with the stream framing of the envelope,
// choosing the framer when the frame's first byte is there.
func (s *streamConn) ReadFrame(choose func() envelope.Framer) (envelope.Frame, error) {
	if _, err := s.br.Peek(1); err != nil {
		return envelope.Frame{}, err // io.EOF at a frame boundary, or the socket's error
	}
	return choose().ReadFrame(s.br)
}

// SetReadDeadline sets the socket's read deadline.
func (s *streamConn) SetReadDeadline(t time.Time) error { return s.nc.SetReadDeadline(t) }

// SetWriteDeadline sets the socket's write deadline.
func (s *streamConn) SetWriteDeadline(t time.Time) error { return s.nc.SetWriteDeadline(t) }

// WriteFrame appends f to the batch; nothing is written until Flush.
func (s *streamConn) WriteFrame(f *envelope.Frame) error {
	out, err := s.codec.AppendFrame(s.wbuf, f)
	if err != nil {
		return err
	}
	s.wbuf = out
	return nil
}

// BatchBytes is the size of the encoded batch.
func (s *streamConn) BatchBytes() int { return len(s.wbuf) }

// Flush writes the batch in one Write.
func (s *streamConn) Flush() error {
	if len(s.wbuf) == 0 {
		return nil
	}
	_, err := s.nc.Write(s.wbuf)
	s.wbuf = s.wbuf[:0]
	if cap(s.wbuf) > 4*batchBytes {
		s.wbuf = nil // one huge frame should not pin its buffer
	}
	return err
}

// Close closes the socket. A TLS connection sends close_notify first
// (bounded by crypto/tls's own 5 s) unless the peer is not reading: then
// only the TCP connection is closed.
func (s *streamConn) Close(r session.Reason) {
	if s.closed {
		return
	}
	s.closed = true
	if tc, ok := s.nc.(*tls.Conn); ok && (r == session.SlowConsumer || r == session.WriteFailed) {
		tc.NetConn().Close()
		return
	}
	s.nc.Close()
}

// RemoteAddr is the socket's peer address.
func (s *streamConn) RemoteAddr() net.Addr { return s.nc.RemoteAddr() }
