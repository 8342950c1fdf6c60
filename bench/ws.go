package bench

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/url"
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

func (c wsConn) login(ctx context.Context, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageBinary, frame[4:]); err != nil {
		return err
	}
	for {
		_, msg, err := c.ws.Read(ctx)
		if err != nil {
			return err
		}
		if len(msg) >= 8 && binary.BigEndian.Uint32(msg[4:]) == loginID {
			return loginAnswer(msg[1:4])
		}
	}
}

// drive runs the connection's closed loop on the calling goroutine, as the
// stream's does: each answer read frees its slot, whose next request is
// written (a message of its own) before the next answer is read.
func (c wsConn) drive(ctx context.Context, o Options, m *measure, h *Histogram, w *windows) (n, errs uint64) {
	s := newSlots(o, m, h, w)
	msg := make([]byte, 8+len(o.Body))
	msg[0] = 1
	msg[1], msg[2], msg[3] = byte(o.Route>>16), byte(o.Route>>8), byte(o.Route)
	copy(msg[8:], o.Body)
	send := func(now int64, slot uint32) error {
		s.sent[slot] = now
		binary.BigEndian.PutUint32(msg[4:], slot)
		return c.ws.Write(ctx, websocket.MessageBinary, msg)
	}
	now := time.Now().UnixNano()
	for slot := 1; slot <= o.InFlight; slot++ {
		if send(now, uint32(slot)) != nil {
			return s.n, s.errs
		}
	}
	var hdr [8]byte
	for {
		_, r, err := c.ws.Reader(ctx)
		if err != nil {
			return s.n, s.errs
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return s.n, s.errs
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return s.n, s.errs
		}
		now = time.Now().UnixNano()
		route := uint32(hdr[1])<<16 | uint32(hdr[2])<<8 | uint32(hdr[3])
		if slot := s.answered(now, route, binary.BigEndian.Uint32(hdr[4:])); slot != 0 {
			if send(now, slot) != nil {
				return s.n, s.errs
			}
		}
	}
}
