package bench

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// wsConn is a WebSocket carrying one idlen frame, without its u32 length,
// per binary message. Unlike a stream, the requests ready at once cannot
// share a write: each is a message of its own, written and flushed alone.
type wsConn struct{ ws *websocket.Conn }

func dialWS(ctx context.Context, o Options) (loadConn, error) {
	path := o.Path
	if path == "" {
		path = "/ws"
	}
	u := url.URL{Scheme: "ws", Host: o.Addr, Path: path}
	if o.TLS != nil {
		u.Scheme = "wss"
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: o.TLS}}
	ws, _, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(1 << 20)
	return wsConn{ws}, nil
}

func (c wsConn) stop()  { c.ws.CloseNow() }
func (c wsConn) close() { c.ws.CloseNow() }

func (c wsConn) drive(ctx context.Context, o Options, measuring *atomic.Bool, h *Histogram) (n, errs uint64) {
	s := newSlots(o, measuring, h)
	sent, next := s.sent, s.next
	msg := make([]byte, 8+len(o.Body))
	msg[0] = 1
	msg[1], msg[2], msg[3] = byte(o.Route>>16), byte(o.Route>>8), byte(o.Route)
	copy(msg[8:], o.Body)

	go func() { // writer: one message per request
		for {
			select {
			case <-ctx.Done():
				return
			case slot := <-next:
				sent[slot].Store(time.Now().UnixNano())
				binary.BigEndian.PutUint32(msg[4:], slot)
				if c.ws.Write(context.Background(), websocket.MessageBinary, msg) != nil {
					return
				}
			}
		}
	}()

	var hdr [8]byte
	for {
		_, r, err := c.ws.Reader(context.Background())
		if err != nil {
			return s.n, s.errs
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return s.n, s.errs
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return s.n, s.errs
		}
		route := uint32(hdr[1])<<16 | uint32(hdr[2])<<8 | uint32(hdr[3])
		if !s.answered(ctx, route, binary.BigEndian.Uint32(hdr[4:])) {
			return s.n, s.errs
		}
	}
}
