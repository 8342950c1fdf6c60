package wiretest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// FlakyNet is a TCP proxy in front of a gateway that plays a bad network:
// it cuts every connection (both ways, as a dead route would end them),
// refuses new ones while the network is "down", and can black-hole what
// the client sends or what the gateway sends without closing anything.
type FlakyNet struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	Refusing atomic.Bool   // new connections are closed at once
	DropUp   atomic.Bool   // client -> gateway bytes are read and thrown away
	DropDown atomic.Bool   // gateway -> client bytes are read and thrown away
	Dropped  atomic.Uint64 // bytes thrown away

	mu    sync.Mutex // guards conns
	conns []net.Conn
}

// NewFlakyNet starts a proxy to target on loopback; the test's cleanup
// closes it and every connection through it.
func NewFlakyNet(t testing.TB, target string) *FlakyNet {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FlakyNet{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is where clients dial the proxy.
func (p *FlakyNet) Addr() string { return p.ln.Addr().String() }

func (p *FlakyNet) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.Refusing.Load() {
			down.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(up, down, &p.DropUp)
		go p.pipe(down, up, &p.DropDown)
	}
}

// pipe copies src to dst until either ends, dropping while drop is set.
func (p *FlakyNet) pipe(dst, src net.Conn, drop *atomic.Bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if drop.Load() {
				p.Dropped.Add(uint64(n))
			} else if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a cut: either way this direction is over
			return
		}
	}
}

// Cut resets every connection through the proxy.
func (p *FlakyNet) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not a goodbye
		}
		c.Close()
	}
}

func (p *FlakyNet) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
