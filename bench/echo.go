package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
)

// EchoServer is the baseline the gateway is measured against: a minimal Go
// server speaking idlen that answers every frame with itself, without Lua:
// a goroutine per connection, a buffered reader and writer, and a flush
// whenever the reader has nothing buffered.
type EchoServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
}

// NewEchoServer listens on addr (use 127.0.0.1:0) and serves until Close.
func NewEchoServer(addr string) (*EchoServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &EchoServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the bound address.
func (s *EchoServer) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for their
// goroutines to end.
func (s *EchoServer) Close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *EchoServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			echo(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func echo(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(br, buf[:4]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(buf[:4])
		if n < 8 || int(n)+4 > len(buf) {
			return
		}
		if _, err := io.ReadFull(br, buf[4:4+n]); err != nil {
			return
		}
		if _, err := bw.Write(buf[:4+n]); err != nil {
			return
		}
		if br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
