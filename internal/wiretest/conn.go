package wiretest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/envelope"
)

// Wait is the deadline of every expectation and every poll.
const Wait = 5 * time.Second

// Conn is one raw connection, read and written as a transcript: send
// frames, expect the next one, expect nothing for a while, expect the end.
// Every expectation has a deadline, and a failure prints what arrived.
type Conn struct {
	T     testing.TB
	Name  string
	NC    net.Conn
	BR    *bufio.Reader
	Codec envelope.Framer // decodes the gateway's frames, encodes ours
	Seen  []string        // what arrived, for failure messages
}

// NewConn wraps nc, speaking codec; name labels failure messages.
func NewConn(t testing.TB, name string, nc net.Conn, codec envelope.Framer) *Conn {
	return &Conn{T: t, Name: name, NC: nc, BR: bufio.NewReader(nc), Codec: codec}
}

// Codec is the envelope env's codec as a client uses it (decoding the
// server's frames), up to 1 MiB a frame.
func Codec(t testing.TB, env string) envelope.Framer {
	t.Helper()
	codec, err := envelope.New(env, envelope.FromServer, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return codec
}

// Dial connects over TCP to addr speaking envelope env, closed at cleanup;
// name labels failure messages.
func Dial(t testing.TB, name, addr, env string) *Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, Wait)
	if err != nil {
		t.Fatal(err)
	}
	codec := Codec(t, env)
	t.Cleanup(func() { nc.Close() })
	return NewConn(t, name, nc, codec)
}

// Send encodes frames and writes them in one write.
func (w *Conn) Send(frames ...envelope.Frame) {
	w.T.Helper()
	var buf []byte
	for i := range frames {
		var err error
		if buf, err = w.Codec.AppendFrame(buf, &frames[i]); err != nil {
			w.T.Fatalf("%s: encode %+v: %v", w.Name, frames[i], err)
		}
	}
	w.Write(buf)
}

// Write writes raw bytes.
func (w *Conn) Write(b []byte) {
	w.T.Helper()
	w.NC.SetWriteDeadline(time.Now().Add(Wait))
	if _, err := w.NC.Write(b); err != nil {
		w.T.Fatalf("%s: write: %v", w.Name, err)
	}
}

// HalfClose ends what we send, so the gateway reads EOF, while we can
// still read what it says.
func (w *Conn) HalfClose() {
	w.T.Helper()
	if err := w.NC.(*net.TCPConn).CloseWrite(); err != nil {
		w.T.Fatal(err)
	}
}

// Next reads the next frame within the deadline.
func (w *Conn) Next() (envelope.Frame, error) {
	w.NC.SetReadDeadline(time.Now().Add(Wait))
	f, err := envelope.Read(w.Codec, w.BR)
	if err == nil {
		w.Seen = append(w.Seen, fmt.Sprintf("{%v route=%d id=%d code=%q body=%.80s}", f.Kind, f.RouteID, f.RequestID, f.Code, f.Body))
	}
	return f, err
}

// Expect reads the next frame and checks it against want: Kind always;
// RouteID, RequestID, Code and Body when want sets them.
func (w *Conn) Expect(want envelope.Frame) envelope.Frame {
	w.T.Helper()
	f, err := w.Next()
	if err != nil {
		w.T.Fatalf("%s: want %v, got error %v; seen %v", w.Name, want.Kind, err, w.Seen)
	}
	if f.Kind != want.Kind || want.RouteID != 0 && f.RouteID != want.RouteID ||
		want.RequestID != 0 && f.RequestID != want.RequestID || want.Code != "" && f.Code != want.Code ||
		want.Body != nil && string(f.Body) != string(want.Body) {
		w.T.Fatalf("%s: want {%v route=%d id=%d code=%q body=%s}, got the last of %v",
			w.Name, want.Kind, want.RouteID, want.RequestID, want.Code, want.Body, w.Seen)
	}
	return f
}

// ExpectBytes reads exactly len(want) raw bytes and compares them.
func (w *Conn) ExpectBytes(want []byte) {
	w.T.Helper()
	w.NC.SetReadDeadline(time.Now().Add(Wait))
	got := make([]byte, len(want))
	if n, err := io.ReadFull(w.BR, got); err != nil {
		w.T.Fatalf("%s: want % x, got % x then %v", w.Name, want, got[:n], err)
	}
	if string(got) != string(want) {
		w.T.Fatalf("%s: want % x\n got % x", w.Name, want, got)
	}
}

// ExpectNothing checks that no byte arrives within d.
func (w *Conn) ExpectNothing(d time.Duration) {
	w.T.Helper()
	w.NC.SetReadDeadline(time.Now().Add(d))
	_, err := w.BR.Peek(1)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		w.T.Fatalf("%s: want nothing for %v, got %v; seen %v", w.Name, d, err, w.Seen)
	}
}

// ExpectClosed checks that the gateway ends the connection, with no frame
// before the end.
func (w *Conn) ExpectClosed() {
	w.T.Helper()
	f, err := w.Next()
	if err == nil {
		w.T.Fatalf("%s: want the connection closed, got %+v; seen %v", w.Name, f, w.Seen)
	}
	if !PeerGone(err) {
		w.T.Fatalf("%s: want the connection closed, got %v; seen %v", w.Name, err, w.Seen)
	}
}

// PeerGone reports whether err is the peer ending the connection: a FIN,
// or a reset when it closed with our bytes unread.
func PeerGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
