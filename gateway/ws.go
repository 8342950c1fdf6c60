package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/session"
)

// wsConn is an upgraded WebSocket connection carrying exactly one frame per
// message in both directions (SPEC §3, Transports): a binary message holds
// an idlen, typelen or lenprefix frame without its u32 length prefix (the
// message boundary is the length), a text message one delimiter wrapper
// without its newline. Messages are read through coder/websocket's message
// reader into a buffer of our own that never grows past max_frame_bytes.
//
// A message of the other type (text on a binary envelope, binary on
// delimiter) is a protocol error with reason bad_type: the message type is
// the transport's frame type, and a client that picks the wrong one speaks
// another envelope, which is what bad_type stands for elsewhere (a kind the
// peer may not send). Nothing of such a message is read.
//
// Writes cannot be batched across messages: each frame is its own message,
// framed and flushed by the library. A batch of the write loop is therefore
// only the unit of write_timeout here.
//
// coder/websocket answers pings and echoes a close frame from the reading
// goroutine, serialised with our writes by its own lock; this is the one
// place where a goroutine other than the write loop writes to a client.
type wsConn struct {
	ws    *websocket.Conn
	raw   *frameWatch // the upgraded connection's plaintext: deadlines are set on it
	codec envelope.Framer
	typ   websocket.MessageType // text for delimiter, binary for the others
	max   int                   // max_frame_bytes

	rbuf     []byte                // the read loop's message buffer, kept while small
	next     io.Reader             // the message Wait found, for the next ReadFrame
	nextType websocket.MessageType // its type
	wbuf     []byte                // the write loop's encoding buffer, kept while small
	batch    int                   // bytes written since the last Flush

	mu      sync.Mutex           // guards closing, code, and raw's read deadline once closing
	closing bool                 // Close has begun: the read deadline is Close's
	code    websocket.StatusCode // the close status a protocol error asked for; 0: by session reason
	closed  bool                 // write loop only (then the teardown): makes Close idempotent
}

var _ frameConn = (*wsConn)(nil)

// closeWait bounds the close handshake: the close frame is written and the
// peer's answer awaited this long at most before the socket is closed.
const closeWait = time.Second

// wsMinBuffer is the first size of a connection's read buffer; it doubles
// as messages need, up to max_frame_bytes, and is kept between messages
// only while it is no larger than readBufferSize.
const wsMinBuffer = 1024

func newWSConn(ws *websocket.Conn, raw *frameWatch, codec envelope.Framer, maxFrameBytes int) *wsConn {
	typ := websocket.MessageBinary
	if codec.Text() {
		typ = websocket.MessageText
	}
	// The library's own limit (default 32 KiB) would refuse a legal frame;
	// ours is max_frame_bytes. readMessage checks it too, by the byte, so
	// that no more than the limit is ever buffered.
	ws.SetReadLimit(int64(maxFrameBytes))
	return &wsConn{ws: ws, raw: raw, codec: codec, typ: typ, max: maxFrameBytes}
}

// ReadFrame reads the next data message and decodes it as one frame, into
// *f, with fr, whose max_frame_bytes caps the message.
func (w *wsConn) ReadFrame(fr envelope.Framer, f *envelope.Frame) error {
	*f = envelope.Frame{}
	if w.next == nil {
		if err := w.Wait(); err != nil {
			return err
		}
	}
	typ, r := w.nextType, w.next
	w.next = nil

	if typ != w.typ {
		return w.protocolError(envelope.ReasonBadType, websocket.StatusUnsupportedData,
			"a %s message on a %s listener, which takes %s messages", typeName(typ), w.codec.Name(), typeName(w.typ))
	}
	msg, err := w.readMessage(r, fr.MaxFrameBytes())
	if err != nil {
		return err
	}
	err = fr.DecodeMessage(msg, f)
	if cap(msg) <= readBufferSize {
		w.rbuf = msg[:0] // DecodeMessage never aliases msg
	} else {
		w.rbuf = nil // a large message should not pin its buffer on an idle session
	}
	if err != nil {
		var pe *envelope.ProtocolError
		if errors.As(err, &pe) {
			w.setCode(websocket.StatusPolicyViolation)
		}
	}
	return err
}

// Buffered is false: the library's buffer is its own.
func (w *wsConn) Buffered(envelope.Framer) bool { return false }

// RetryWait is false: a read that times out breaks the WebSocket.
func (w *wsConn) RetryWait() bool { return false }

// Wait blocks until the next message has begun to arrive.
func (w *wsConn) Wait() error {
	typ, r, err := w.ws.Reader(context.Background())
	if err != nil {
		return w.readError(err)
	}
	w.nextType, w.next = typ, r
	return nil
}

// readMessage reads the message r into w.rbuf, growing it up to limit
// bytes. A message with one byte more is too_large: the read stops there.
func (w *wsConn) readMessage(r io.Reader, limit int) ([]byte, error) {
	buf := w.rbuf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				var one [1]byte
				n, err := io.ReadFull(r, one[:])
				switch {
				case n == 1 || errors.Is(err, websocket.ErrMessageTooBig):
					return nil, w.tooLarge()
				case err == io.EOF:
					return buf, nil
				default:
					return nil, w.readError(err)
				}
			}
			grown := make([]byte, len(buf), min(max(2*cap(buf), wsMinBuffer), limit))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, w.readError(err)
		}
	}
}

// readError maps the library's errors onto the read loop's: a message over
// the limit is too_large, a frame header a client may not send (the
// watch's other faults) bad_type with 1002, a close frame from the peer a
// clean end (io.EOF);
// anything else (a deadline, a closed socket) passes through wrapped, so
// errors.Is still finds os.ErrDeadlineExceeded.
func (w *wsConn) readError(err error) error {
	switch f := w.raw.fault(); {
	case f == faultTooLarge:
		return w.tooLarge()
	case f != faultNone:
		return w.protocolError(envelope.ReasonBadType, websocket.StatusProtocolError, "%v", f)
	case errors.Is(err, websocket.ErrMessageTooBig):
		return w.tooLarge()
	case websocket.CloseStatus(err) != -1:
		return io.EOF
	default:
		return err
	}
}

func (w *wsConn) tooLarge() error {
	return w.protocolError(envelope.ReasonTooLarge, websocket.StatusMessageTooBig,
		"message above max_frame_bytes %d", w.max)
}

// protocolError records the close status to send and returns the error.
func (w *wsConn) protocolError(r envelope.Reason, code websocket.StatusCode, format string, args ...any) error {
	w.setCode(code)
	return &envelope.ProtocolError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

func (w *wsConn) setCode(code websocket.StatusCode) {
	w.mu.Lock()
	w.code = code
	w.mu.Unlock()
}

// SetReadDeadline sets the socket's read deadline, unless Close has begun:
// then the deadline is the close handshake's and must not be pushed back.
func (w *wsConn) SetReadDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return net.ErrClosed
	}
	return w.raw.SetReadDeadline(t)
}

// SetWriteDeadline sets the socket's write deadline.
func (w *wsConn) SetWriteDeadline(t time.Time) error { return w.raw.SetWriteDeadline(t) }

// WriteFrame writes f as one message at once.
func (w *wsConn) WriteFrame(f *envelope.Frame) error {
	msg, err := w.codec.AppendMessage(w.wbuf[:0], f)
	if err != nil {
		return err
	}
	if cap(msg) <= batchBytes {
		w.wbuf = msg
	} else {
		w.wbuf = nil
	}
	w.batch += len(msg)
	return w.ws.Write(context.Background(), w.typ, msg)
}

// BatchBytes is how much was written since the last Flush.
func (w *wsConn) BatchBytes() int { return w.batch }

// Flush ends the batch; every message is already written.
func (w *wsConn) Flush() error {
	w.batch = 0
	return nil
}

// Direct is false: the library writes a message only by waiting for the
// socket, so every write goes through the write loop.
func (w *wsConn) Direct() bool { return false }

// TryFlush reports whether the batch is written: it always is.
func (w *wsConn) TryFlush() (bool, error) { return true, nil }

// Release drops the encoding buffer, so that an idle session holds none.
func (w *wsConn) Release() { w.wbuf = nil }

// Close sends a close frame with a status for r (or for the protocol error
// that ended the read loop) and waits up to closeWait for the peer's; a
// peer that does not read gets no close frame.
func (w *wsConn) Close(r session.Reason) {
	if w.closed {
		return
	}
	w.closed = true
	w.mu.Lock()
	w.closing = true
	code := w.code
	w.mu.Unlock()
	if r == session.SlowConsumer || r == session.WriteFailed {
		_ = w.ws.CloseNow()
		return
	}
	if code == 0 {
		code = closeStatus(r)
	}
	_ = w.raw.SetDeadline(time.Now().Add(closeWait))
	_ = w.ws.Close(code, string(r))
}

// RemoteAddr is the client's address.
func (w *wsConn) RemoteAddr() net.Addr { return w.raw.RemoteAddr() }

// closeStatus is the WebSocket close status for a session's end. The
// notice frame written before it, if any, says more.
func closeStatus(r session.Reason) websocket.StatusCode {
	switch r {
	case session.Draining:
		return websocket.StatusGoingAway
	case session.ProtocolError, session.RateLimited:
		return websocket.StatusPolicyViolation
	case session.Closed, session.Kicked, session.IdleTimeout:
		return websocket.StatusNormalClosure
	default:
		return websocket.StatusNormalClosure
	}
}

func typeName(t websocket.MessageType) string {
	switch t {
	case websocket.MessageText:
		return "text"
	case websocket.MessageBinary:
		return "binary"
	default:
		return fmt.Sprintf("type-%d", int(t))
	}
}
