package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/shieldrpc/shield/envelope"
)

// transport is one connection to a gateway seen as frames (SPEC §3,
// Transports). readFrame runs on the client's read loop only; the write
// methods run under Client.wmu. A write ends by ctx's deadline or after
// writeTimeout, whichever is first: a gateway that stopped reading must
// not hang a caller forever.
type transport interface {
	readFrame() (envelope.Frame, error)
	writeFrame(ctx context.Context, f *envelope.Frame) error
	// writeFrames writes fs back to back: one write on a stream, one
	// message each on ws.
	writeFrames(ctx context.Context, fs ...*envelope.Frame) error
	writeRaw(ctx context.Context, b []byte) error
	close() error
	localAddr() net.Addr
}

// dialTransport connects as o says: TCP or a WebSocket, either over TLS
// when o.TLS is set. ctx bounds the dial and every handshake.
func dialTransport(ctx context.Context, addr string, o Options, codec envelope.Framer) (transport, error) {
	var d net.Dialer
	switch o.Transport {
	case "", "tcp":
		var nc net.Conn
		var err error
		if o.TLS != nil {
			td := tls.Dialer{NetDialer: &d, Config: o.TLS}
			nc, err = td.DialContext(ctx, "tcp", addr)
		} else {
			nc, err = d.DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			return nil, err
		}
		return &streamTransport{nc: nc, br: bufio.NewReader(nc), codec: codec}, nil
	case "ws":
		return dialWS(ctx, addr, o, codec, &d)
	default:
		return nil, fmt.Errorf("client: unknown transport %q (want tcp or ws)", o.Transport)
	}
}

// streamTransport carries the envelope's bytes as they are, over TCP or TLS.
type streamTransport struct {
	nc    net.Conn
	br    *bufio.Reader
	codec envelope.Framer
	wbuf  []byte
}

func (s *streamTransport) readFrame() (envelope.Frame, error) { return envelope.Read(s.codec, s.br) }

func (s *streamTransport) writeFrame(ctx context.Context, f *envelope.Frame) error {
	buf, err := s.codec.AppendFrame(s.wbuf[:0], f)
	if err != nil {
		return err
	}
	s.wbuf = buf
	return s.writeRaw(ctx, buf)
}

func (s *streamTransport) writeFrames(ctx context.Context, fs ...*envelope.Frame) error {
	buf := s.wbuf[:0]
	for _, f := range fs {
		var err error
		if buf, err = s.codec.AppendFrame(buf, f); err != nil {
			return err
		}
	}
	s.wbuf = buf
	return s.writeRaw(ctx, buf)
}

// writeRaw writes b by ctx's deadline, at most writeTimeout from now. A
// write that fails may have sent part of a frame, after which the stream
// cannot be read as frames any more: the connection is closed, and the read
// loop ends the client.
func (s *streamTransport) writeRaw(ctx context.Context, b []byte) error {
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := s.nc.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("client: write: %w", err)
	}
	if _, err := s.nc.Write(b); err != nil {
		s.nc.Close()
		return fmt.Errorf("client: write: %w", err)
	}
	return nil
}

func (s *streamTransport) close() error        { return s.nc.Close() }
func (s *streamTransport) localAddr() net.Addr { return s.nc.LocalAddr() }

// wsTransport carries one frame per WebSocket message: binary without the
// u32 length prefix for idlen, typelen and lenprefix, text for delimiter.
type wsTransport struct {
	ws    *websocket.Conn
	codec envelope.Framer
	typ   websocket.MessageType
	local net.Addr
	wbuf  []byte
}

// dialWS upgrades at ws://addr/path (wss:// with o.TLS), sending o.Origin
// as the Origin header when set.
func dialWS(ctx context.Context, addr string, o Options, codec envelope.Framer, d *net.Dialer) (transport, error) {
	path := o.Path
	if path == "" {
		path = "/ws"
	}
	u := url.URL{Scheme: "ws", Host: addr, Path: path}
	if o.TLS != nil {
		u.Scheme = "wss"
	}
	t := &wsTransport{codec: codec, typ: websocket.MessageBinary}
	if codec.Text() {
		t.typ = websocket.MessageText
	}
	// A transport of its own: HTTP/1.1 only (no HTTP/2 with a custom TLS
	// config), no proxy, and a dialer that notes the local address.
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: o.TLS,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := d.DialContext(ctx, network, addr)
			if err == nil {
				t.local = nc.LocalAddr()
			}
			return nc, err
		},
	}}
	opts := &websocket.DialOptions{HTTPClient: hc}
	if o.Origin != "" {
		opts.HTTPHeader = http.Header{"Origin": {o.Origin}}
	}
	ws, resp, err := websocket.Dial(ctx, u.String(), opts)
	if err != nil {
		if resp != nil {
			return nil, &UpgradeError{Status: resp.StatusCode, Err: err}
		}
		return nil, err
	}
	ws.SetReadLimit(int64(o.MaxFrameBytes))
	t.ws = ws
	return t, nil
}

// UpgradeError is a WebSocket upgrade the gateway answered with an HTTP
// status other than 101: 403 for an Origin not in allowed_origins, 404
// for a path other than the listener's.
type UpgradeError struct {
	Status int
	Err    error
}

func (e *UpgradeError) Error() string {
	return fmt.Sprintf("client: WebSocket upgrade refused with HTTP %d: %v", e.Status, e.Err)
}

func (e *UpgradeError) Unwrap() error { return e.Err }

// ErrMessageType is returned by the read loop when the gateway sends a
// message of the other type than the envelope's.
var ErrMessageType = errors.New("client: WebSocket message of the wrong type")

func (t *wsTransport) readFrame() (envelope.Frame, error) {
	typ, msg, err := t.ws.Read(context.Background())
	if err != nil {
		return envelope.Frame{}, err
	}
	if typ != t.typ {
		return envelope.Frame{}, ErrMessageType
	}
	return envelope.Decode(t.codec, msg)
}

func (t *wsTransport) writeFrame(ctx context.Context, f *envelope.Frame) error {
	msg, err := t.codec.AppendMessage(t.wbuf[:0], f)
	if err != nil {
		return err
	}
	t.wbuf = msg
	return t.writeRaw(ctx, msg)
}

func (t *wsTransport) writeFrames(ctx context.Context, fs ...*envelope.Frame) error {
	for _, f := range fs {
		if err := t.writeFrame(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// writeRaw sends b as one message of the envelope's type. The library
// closes the connection when ctx ends during the write.
func (t *wsTransport) writeRaw(ctx context.Context, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := t.ws.Write(ctx, t.typ, b); err != nil {
		return fmt.Errorf("client: write: %w", err)
	}
	return nil
}

// close sends a close frame and waits (at most the library's 5 s) for the
// gateway's answer, which the read loop receives.
func (t *wsTransport) close() error {
	return t.ws.Close(websocket.StatusNormalClosure, "")
}

func (t *wsTransport) localAddr() net.Addr { return t.local }

// writeTimeout bounds one write: a gateway that stopped reading must not
// hang a caller forever.
const writeTimeout = 10 * time.Second
