package gateway

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shieldrpc/shield/envelope"
)

// tcpPair is a streamConn over a real loopback TCP connection, and the
// client's end of it.
func tcpPair(t *testing.T) (*streamConn, net.Conn, envelope.Framer) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cli, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s := newStreamConn(srv, nil)
	t.Cleanup(func() { cli.Close(); s.Close("closed") })
	if s.raw == nil {
		t.Fatal("a TCP connection is not read through its RawConn")
	}
	fr, err := envelope.New("idlen", envelope.FromClient, 65536)
	if err != nil {
		t.Fatal(err)
	}
	return s, cli, fr
}

// clientFrames is n requests on route 1, encoded as a client sends them.
func clientFrames(t *testing.T, n int) []byte {
	t.Helper()
	enc, err := envelope.New("idlen", envelope.FromServer, 65536)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for id := 1; id <= n; id++ {
		f := envelope.Frame{Kind: envelope.Request, RouteID: 1, RequestID: uint64(id), Body: []byte(`{"seq":1}`)}
		if b, err = enc.AppendFrame(b, &f); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestRawReadWholeBatch: the frames a client sent at once arrive in one
// read, so every one of them is whole in the buffer once Wait returns (the
// read loop then hands them to their service together).
func TestRawReadWholeBatch(t *testing.T) {
	s, cli, fr := tcpPair(t)
	batch := clientFrames(t, 16)
	if _, err := cli.Write(batch); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // on loopback, all of it is in the socket by then
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := s.br.Buffered(); n != len(batch) {
		t.Fatalf("one wait buffered %d bytes of %d", n, len(batch))
	}
	for id := uint64(1); id <= 16; id++ {
		if !s.Buffered(fr) {
			t.Fatalf("frame %d is not whole in the buffer", id)
		}
		var f envelope.Frame
		err := s.ReadFrame(fr, &f)
		if err != nil || f.RequestID != id {
			t.Fatalf("frame %d: %+v, %v", id, f, err)
		}
	}
}

// TestRawReadCases: a frame split across writes waits for its rest; an idle
// connection waits holding no buffer, until its deadline or the peer's
// close; a frame cut short by the close is an error of the framer's.
func TestRawReadCases(t *testing.T) {
	whole := clientFrames(t, 1)
	tests := []struct {
		name  string
		sends [][]byte // written with a pause between them
		close bool     // the client closes after its sends
		id    uint64   // the frame read, 0 for none
		err   func(error) bool
	}{
		{name: "split frame", sends: [][]byte{whole[:5], whole[5:]}, id: 1},
		{name: "split body", sends: [][]byte{whole[:len(whole)-3], whole[len(whole)-3:]}, id: 1},
		{name: "idle until the deadline", err: func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }},
		{name: "peer closes", close: true, err: func(err error) bool { return errors.Is(err, io.EOF) }},
		{name: "cut short", sends: [][]byte{whole[:len(whole)-3]}, close: true,
			err: func(err error) bool {
				var pe *envelope.ProtocolError
				return errors.As(err, &pe) || errors.Is(err, io.ErrUnexpectedEOF)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, cli, fr := tcpPair(t)
			s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			go func() {
				for _, b := range tc.sends {
					cli.Write(b)
					time.Sleep(20 * time.Millisecond)
				}
				if tc.close {
					cli.Close()
				}
			}()
			var f envelope.Frame
			err := s.ReadFrame(fr, &f)
			switch {
			case tc.err == nil && (err != nil || f.RequestID != tc.id):
				t.Fatalf("read %+v, %v; want frame %d", f, err, tc.id)
			case tc.err != nil && !tc.err(err):
				t.Fatalf("read %+v, %v; want another error", f, err)
			}
			if tc.err == nil {
				// Nothing more comes: the wait gives the buffer back.
				if err := s.Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("wait after the frame: %v, want the deadline", err)
				}
			}
			if tc.sends == nil && s.br != nil {
				t.Fatal("an idle connection holds a read buffer")
			}
		})
	}
}

// TestRawReadNoLostWakeup: data that arrives just after an attempt found
// none wakes the wait. (A wait that reset the poller after the attempt
// lost it, and the session sat until its deadline: one in ten thousand
// logins of `gateway bench -idle` timed out so.)
func TestRawReadNoLostWakeup(t *testing.T) {
	s, cli, fr := tcpPair(t)
	frame := clientFrames(t, 1)
	ready := make(chan struct{})
	go func() {
		for i := range 2000 {
			if _, ok := <-ready; !ok {
				return
			}
			for range i % 50 * 20 { // a spread of delays around the attempt
			}
			if _, err := cli.Write(frame); err != nil {
				return
			}
		}
	}()
	defer close(ready)
	for i := range 2000 {
		s.SetReadDeadline(time.Now().Add(2 * time.Second))
		ready <- struct{}{}
		if err := s.Wait(); err != nil { // as the read loop does: an attempt, then a wait
			t.Fatalf("wait %d: %v", i, err)
		}
		var f envelope.Frame
		err := s.ReadFrame(fr, &f)
		if err != nil || f.RequestID != 1 {
			t.Fatalf("read %d: %+v, %v", i, f, err)
		}
	}
}
