package gateway

import (
	"bufio"
	"errors"
	"io"
	"os"
	"syscall"
)

// A plain TCP connection is read through its syscall.RawConn rather than
// net.Conn.Read, so that the read loop can try a read into a borrowed
// buffer and, when the socket has nothing, give the buffer back before it
// waits. net.Conn.Read waits inside the read, with whatever buffer it was
// given, so an idle session had to wait in a read into a small probe and
// then read the rest into the borrowed buffer: three reads for every
// wake-up (the one that found nothing, the probe's, the rest), and the
// probe's bytes made the frames of one read arrive in two deliveries.
// Here it is two reads (the one that finds nothing, then all there is, up
// to the buffer's size) and one delivery. TLS connections keep the probe
// (streamConn.Wait).

// errWouldBlock is what a read attempt returns when the socket has nothing
// now. It never leaves streamConn: the framer sees only reads that wait.
var errWouldBlock = errors.New("gateway: nothing to read now")

// rawReader is the io.Reader a plain TCP connection's bufio.Reader reads
// from. Its reads wait for data under the socket's read deadline, as
// net.Conn.Read does, except an attempt (streamConn.waitRaw), which
// returns errWouldBlock instead of waiting.
type rawReader struct {
	s *streamConn
	// attempt is the fd of the RawConn.Read in progress while its
	// function makes an attempt; -1 otherwise.
	attempt int

	// The read's buffer and results, for read, and waitRaw's function:
	// made once, so that a read allocates nothing.
	b       []byte
	n       int
	err     error
	read    func(fd uintptr) bool
	wait    func(fd uintptr) bool
	waitErr error
}

func (r *rawReader) init(s *streamConn) {
	r.s, r.attempt = s, -1
	r.read = func(fd uintptr) bool {
		n, err := readOnce(int(fd), r.b)
		if errors.Is(err, errWouldBlock) {
			return false // the poller waits until the socket is readable, or the deadline
		}
		r.n, r.err = n, err
		return true
	}
	r.wait = s.attemptRead
}

// readOnce is one non-blocking read(2) into b.
func readOnce(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Read reads what the socket has into b, waiting for something unless it
// is an attempt's.
func (r *rawReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if r.attempt >= 0 {
		return readOnce(r.attempt, b)
	}
	r.b, r.n, r.err = b, 0, nil
	err := r.s.raw.Read(r.read)
	r.b = nil
	if err != nil {
		return 0, err // the deadline, or a closed socket
	}
	return r.n, r.err
}

// waitRaw is Wait on a plain TCP connection: read attempts into the read
// buffer (the one the connection holds, or one borrowed for it), and
// between them, when the socket has nothing, waits that hold no buffer.
// The attempts and the waits are one RawConn.Read, whose poller is reset
// once, before the first attempt: data that arrives after an attempt
// found none wakes the wait that follows it.
func (s *streamConn) waitRaw() error {
	s.rr.waitErr = nil
	if err := s.raw.Read(s.rr.wait); err != nil {
		s.putReader()
		return err // the deadline, or a closed socket
	}
	return s.rr.waitErr
}

// attemptRead is waitRaw's function: one attempt, true when it read
// something or failed, false (to wait) when the socket had nothing.
func (s *streamConn) attemptRead(fd uintptr) bool {
	if s.br == nil {
		s.br = readers.Get().(*bufio.Reader)
		s.br.Reset(&s.rr)
	}
	s.rr.attempt = int(fd)
	_, err := s.br.Peek(1)
	s.rr.attempt = -1
	if err == nil {
		return true
	}
	s.putReader() // nothing came: the wait, or the end, holds no buffer
	if errors.Is(err, errWouldBlock) {
		return false
	}
	s.rr.waitErr = err
	return true
}
