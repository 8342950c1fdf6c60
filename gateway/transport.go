package gateway

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"syscall"
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
	// ReadFrame reads the next whole frame into *f (set whole; the zero
	// Frame on error) with fr, whose max_frame_bytes caps it (the
	// listener's, or session.auth_max_frame_bytes before login). It
	// returns a *envelope.ProtocolError for a violation, io.EOF when the
	// peer ended the connection cleanly, and other errors (deadlines,
	// closed sockets) so that errors.Is sees them.
	ReadFrame(fr envelope.Framer, f *envelope.Frame) error
	// Wait blocks until the next frame has begun to arrive, with
	// ReadFrame's errors, so that the read loop picks the frame's cap
	// (before or after login) when the frame comes, not before.
	Wait() error
	// SetReadDeadline bounds the next ReadFrame: session.idle_timeout is a
	// deadline per frame, not per read.
	SetReadDeadline(t time.Time) error
	// Buffered reports whether the next frame is whole in the
	// connection's buffer, so that ReadFrame with fr reads nothing more
	// (and needs no deadline). A WebSocket does not know: false.
	Buffered(fr envelope.Framer) bool
	// RetryWait reports whether a Wait that failed on the read deadline
	// may be called again, having consumed nothing: a stream's may (its
	// read loop then sets the deadline only when one runs out, not for
	// every frame); a WebSocket's connection is broken by it.
	RetryWait() bool
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
	// Direct reports whether TryFlush can write at all (a plain TCP
	// connection): only then may the owner of the write side write
	// without the write loop.
	Direct() bool
	// TryFlush writes as much of the batch as the transport takes without
	// waiting and reports whether all of it went out; the rest stays for
	// Flush. An error is the connection's.
	TryFlush() (bool, error)
	// Release gives back the batch's buffer once it is empty, so that an
	// idle connection holds none.
	Release()
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

// readBufferSize is enough for typical game frames in one read. A
// connection holds such a buffer only while bytes of a frame are buffered
// (streamConn.Wait): an idle session holds none.
const readBufferSize = 4096

// probeSize is the read an idle TLS connection waits in: the only buffer
// it holds. A small request fits whole, so that at one request in flight a
// frame costs one read; a batch of requests costs one more read. A plain
// TCP connection needs none (rawread.go).
const probeSize = 128

// readers holds the read buffers of connections that are reading frames,
// readFrames the Frames their read loops decode into meanwhile;
// writeBuffers the encoding buffers of connections that are writing.
var (
	readers      = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}
	readFrames   = sync.Pool{New: func() any { return new(envelope.Frame) }}
	writeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, readBufferSize); return &b }}
)

// streamConn is a TCP or TLS connection carrying the envelope's bytes as
// they are: frames are read through a bufio.Reader with the codec's
// ReadFrame and written in batches, every frame of a batch appended to one
// buffer and written with one Write. Both buffers are borrowed from pools
// while in use only; an idle connection waits holding none (rawread.go),
// or under TLS in a read into probe.
type streamConn struct {
	nc    net.Conn        // *net.TCPConn or *tls.Conn
	raw   syscall.RawConn // a TCP connection's, for its reads and TryFlush; nil under TLS
	fd    int             // raw's socket, for the parker (park.go); -1 under TLS
	codec envelope.Framer

	br    *bufio.Reader    // borrowed from readers while bytes are buffered; nil when idle
	rr    rawReader        // what br reads from on plain TCP
	src   probeReader      // what br reads from under TLS: the probe's bytes, then nc
	probe *[probeSize]byte // made on the first wait under TLS

	wb *[]byte // the current batch, encoded; borrowed from writeBuffers; nil when empty

	// TryFlush's write, made once so that a try allocates nothing.
	try    func(fd uintptr) bool
	tryN   int
	tryErr error

	// closed makes Close idempotent. Only the owner of the write side
	// (gateway/write.go) and, after the write side ended, the
	// connection's teardown call Close, so it needs no lock.
	closed bool
}

var _ frameConn = (*streamConn)(nil)

func newStreamConn(nc net.Conn, codec envelope.Framer) *streamConn {
	s := &streamConn{nc: nc, codec: codec, fd: -1}
	s.src.nc = nc
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			s.raw = raw
			_ = raw.Control(func(fd uintptr) { s.fd = int(fd) })
			s.rr.init(s)
			s.try = func(fd uintptr) bool {
				s.tryN, s.tryErr = writeOnce(int(fd), *s.wb)
				return true // one attempt: never wait for the socket
			}
		}
	}
	return s
}

// probeReader is what a connection's bufio.Reader reads: the bytes the
// probe read (and its error), then the connection.
type probeReader struct {
	nc      net.Conn
	pending []byte
	err     error
}

func (p *probeReader) Read(b []byte) (int, error) {
	if len(p.pending) > 0 {
		n := copy(b, p.pending)
		p.pending = p.pending[n:]
		return n, nil
	}
	if p.err != nil {
		err := p.err
		p.err = nil
		return 0, err
	}
	return p.nc.Read(b)
}

// Wait blocks until a byte of the next frame is buffered. A connection
// with nothing buffered gives its read buffer back before it waits, so
// that an idle session holds no buffer: under TLS it waits in a read into
// probe.
func (s *streamConn) Wait() error {
	if s.br != nil && s.br.Buffered() > 0 {
		return nil
	}
	if s.raw != nil {
		return s.waitRaw()
	}
	s.putReader()
	if s.probe == nil {
		s.probe = new([probeSize]byte)
	}
	n, err := s.nc.Read(s.probe[:])
	if n == 0 {
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	s.src.pending, s.src.err = s.probe[:n], err
	s.br = readers.Get().(*bufio.Reader)
	s.br.Reset(&s.src)
	return nil
}

// putReader gives the read buffer back, if the connection holds one.
func (s *streamConn) putReader() {
	if s.br != nil {
		s.br.Reset(nil)
		readers.Put(s.br)
		s.br = nil
	}
}

// Buffered reports whether the next frame is whole in the read buffer.
func (s *streamConn) Buffered(fr envelope.Framer) bool { return s.br != nil && fr.Buffered(s.br) }

// RetryWait is true: a Wait that times out has read nothing.
func (s *streamConn) RetryWait() bool { return true }

// ReadFrame reads one frame with the stream framing of the envelope.
func (s *streamConn) ReadFrame(fr envelope.Framer, f *envelope.Frame) error {
	if s.br == nil {
		if err := s.Wait(); err != nil {
			*f = envelope.Frame{}
			return err
		}
	}
	return fr.ReadFrame(s.br, f)
}

// SetReadDeadline sets the socket's read deadline.
func (s *streamConn) SetReadDeadline(t time.Time) error { return s.nc.SetReadDeadline(t) }

// SetWriteDeadline sets the socket's write deadline.
func (s *streamConn) SetWriteDeadline(t time.Time) error { return s.nc.SetWriteDeadline(t) }

// WriteFrame appends f to the batch; nothing is written until Flush.
func (s *streamConn) WriteFrame(f *envelope.Frame) error {
	if s.wb == nil {
		s.wb = writeBuffers.Get().(*[]byte)
	}
	out, err := s.codec.AppendFrame(*s.wb, f)
	if err != nil {
		return err
	}
	*s.wb = out
	return nil
}

// BatchBytes is the size of the encoded batch.
func (s *streamConn) BatchBytes() int {
	if s.wb == nil {
		return 0
	}
	return len(*s.wb)
}

// Flush writes the batch in one Write.
func (s *streamConn) Flush() error {
	if s.wb == nil || len(*s.wb) == 0 {
		return nil
	}
	_, err := s.nc.Write(*s.wb)
	*s.wb = (*s.wb)[:0]
	return err
}

// Direct reports whether TryFlush can write: on a plain TCP connection.
func (s *streamConn) Direct() bool { return s.raw != nil }

// TryFlush writes as much of the batch as the socket takes now, in one
// write that never waits, and reports whether all of it went out; what
// did not stays for Flush.
func (s *streamConn) TryFlush() (bool, error) {
	if s.wb == nil || len(*s.wb) == 0 {
		return true, nil
	}
	if s.raw == nil {
		return false, nil
	}
	if err := s.raw.Write(s.try); err != nil {
		return false, err
	}
	if s.tryErr != nil {
		return false, s.tryErr
	}
	b := *s.wb
	n := copy(b, b[s.tryN:])
	*s.wb = b[:n]
	return n == 0, nil
}

// writeOnce is one non-blocking write(2) of b: the bytes written, 0 when
// the socket takes none now.
func writeOnce(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Write(fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, nil
		case err != nil:
			return 0, err
		}
		return n, nil
	}
}

// Release gives an empty batch buffer back, so that an idle session holds
// none.
func (s *streamConn) Release() {
	if s.wb == nil || len(*s.wb) > 0 {
		return
	}
	if cap(*s.wb) <= 4*batchBytes { // one huge frame should not pin its buffer
		writeBuffers.Put(s.wb)
	}
	s.wb = nil
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
