package acceptance

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/shieldrpc/shield/envelope"
)

// httpTransport makes the HTTP client of a WebSocket dial: HTTP/1.1 only,
// no proxy, optionally TLS.
type httpTransport struct{ tls *tls.Config }

func (h *httpTransport) client() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: h.tls}}
}

// wsMessage is one message the gateway sent, or the error that ended the
// connection.
type wsMessage struct {
	typ websocket.MessageType
	msg []byte
	err error
}

// wsTranscript is a WebSocket read and written as a transcript. A goroutine
// of its own reads, so that waiting for nothing does not end the
// connection (coder/websocket closes a connection whose read context ends).
type wsTranscript struct {
	t     testing.TB
	name  string
	ws    *websocket.Conn
	codec envelope.Framer
	typ   websocket.MessageType // the envelope's message type
	in    chan wsMessage
	done  chan struct{} // closed when readLoop returns
	seen  []string
	ended error // the error that ended the connection, once expectClosed saw it
}

var _ frameWire = (*wsTranscript)(nil)

func (w *wsTranscript) readLoop() {
	defer close(w.done)
	for {
		typ, msg, err := w.ws.Read(context.Background())
		w.in <- wsMessage{typ, msg, err}
		if err != nil {
			return
		}
	}
}

// close ends the connection and waits for the read loop.
func (w *wsTranscript) close() {
	w.ws.CloseNow()
	for {
		select {
		case <-w.done:
			return
		case <-w.in: // let a blocked send through
		}
	}
}

// Send writes each frame as one message of the envelope's type.
func (w *wsTranscript) Send(frames ...envelope.Frame) {
	w.t.Helper()
	for i := range frames {
		msg, err := w.codec.AppendMessage(nil, &frames[i])
		if err != nil {
			w.t.Fatalf("%s: encode %+v: %v", w.name, frames[i], err)
		}
		w.writeMessage(w.typ, msg)
	}
}

// writeMessage writes one message as it is, of any type.
func (w *wsTranscript) writeMessage(typ websocket.MessageType, msg []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	return w.ws.Write(ctx, typ, msg)
}

// next returns the next message within the deadline.
func (w *wsTranscript) next(d time.Duration) (wsMessage, bool) {
	select {
	case m := <-w.in:
		if m.err == nil {
			w.seen = append(w.seen, fmt.Sprintf("%v %.80q", m.typ, m.msg))
		}
		return m, true
	case <-time.After(d):
		return wsMessage{}, false
	}
}

// Expect reads the next message, decodes it and checks it as transcript does.
func (w *wsTranscript) Expect(want envelope.Frame) envelope.Frame {
	w.t.Helper()
	m, ok := w.next(patience)
	switch {
	case !ok:
		w.t.Fatalf("%s: want %v, got nothing within %v; seen %v", w.name, want.Kind, patience, w.seen)
	case m.err != nil:
		w.t.Fatalf("%s: want %v, got error %v; seen %v", w.name, want.Kind, m.err, w.seen)
	case m.typ != w.typ:
		w.t.Fatalf("%s: want a %v message, got %v; seen %v", w.name, w.typ, m.typ, w.seen)
	}
	f, err := envelope.Decode(w.codec, m.msg)
	if err != nil {
		w.t.Fatalf("%s: decode %q: %v", w.name, m.msg, err)
	}
	if f.Kind != want.Kind || want.RouteID != 0 && f.RouteID != want.RouteID ||
		want.RequestID != 0 && f.RequestID != want.RequestID || want.Code != "" && f.Code != want.Code ||
		want.Body != nil && string(f.Body) != string(want.Body) {
		w.t.Fatalf("%s: want {%v route=%d id=%d code=%q body=%s}, got the last of %v",
			w.name, want.Kind, want.RouteID, want.RequestID, want.Code, want.Body, w.seen)
	}
	return f
}

// ExpectNothing checks that no message arrives within d.
func (w *wsTranscript) ExpectNothing(d time.Duration) {
	w.t.Helper()
	if m, ok := w.next(d); ok {
		w.t.Fatalf("%s: want nothing for %v, got %v %q (error %v); seen %v", w.name, d, m.typ, m.msg, m.err, w.seen)
	}
}

// ExpectClosed checks that the connection ends with no message before,
// and keeps the error (a close frame's status) for expectStatus.
func (w *wsTranscript) ExpectClosed() {
	w.t.Helper()
	m, ok := w.next(patience)
	switch {
	case !ok:
		w.t.Fatalf("%s: want the connection closed, got nothing within %v; seen %v", w.name, patience, w.seen)
	case m.err == nil:
		w.t.Fatalf("%s: want the connection closed, got a %v message %q; seen %v", w.name, m.typ, m.msg, w.seen)
	}
	w.ended = m.err
}

// expectStatus checks the close status of a connection expectClosed saw end.
func (w *wsTranscript) expectStatus(want websocket.StatusCode) {
	w.t.Helper()
	if got := websocket.CloseStatus(w.ended); got != want {
		w.t.Fatalf("%s: closed with status %v (%v), want %v", w.name, got, w.ended, want)
	}
}
