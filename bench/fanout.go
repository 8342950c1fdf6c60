package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// FanOptions describe one fan-out run: Members connections join the one
// room of a fan service (RouteJoin), then a sender connection asks it to
// push a body to every member (RouteBlast), keeping about InFlight blasts
// whose pushes have not all arrived yet.
type FanOptions struct {
	Addr     string
	Members  int
	InFlight int
	Duration time.Duration
	Warmup   time.Duration
	Body     []byte // the pushed body; its first 8 bytes are overwritten with the blast's number
}

// FanResult is what a fan-out run measured.
type FanResult struct {
	Pushes  uint64 // pushes the members read while measuring
	Blasts  uint64 // blasts answered while measuring
	Elapsed time.Duration
	Round   *Histogram // from a blast's send to the moment its last push was read (about)
}

// PPS is pushes delivered per second.
func (r FanResult) PPS() float64 { return float64(r.Pushes) / r.Elapsed.Seconds() }

// String is one line for a report.
func (r FanResult) String() string {
	return fmt.Sprintf("%9.0f pushes/s  round p50 %7s  p99 %7s  blasts %d", r.PPS(), r.Round.Quantile(0.5), r.Round.Quantile(0.99), r.Blasts)
}

// Fanout runs a fan-out load against a fan service (the gateway's, or a
// FanServer) and returns when Duration has passed after Warmup. Each
// member reads on a goroutine of its own; a blast counts as delivered once
// the members together have read Members more pushes, so the window is
// about InFlight blasts, not exactly those.
func Fanout(ctx context.Context, o FanOptions) (FanResult, error) {
	if o.Members <= 0 || o.InFlight <= 0 || len(o.Body) < 8 {
		return FanResult{}, errors.New("bench: fan-out needs members, in-flight and a body of 8 bytes or more")
	}
	var d net.Dialer
	conns := make([]net.Conn, 0, o.Members+1)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	join := frameOf(RouteJoin, 1, nil)
	for i := 0; i < o.Members+1; i++ {
		c, err := d.DialContext(ctx, "tcp", o.Addr)
		if err != nil {
			return FanResult{}, fmt.Errorf("bench: dial member %d: %w", i, err)
		}
		conns = append(conns, c)
		if i == o.Members {
			break // the sender joins nothing
		}
		if err := (streamConn{c}).login(ctx, joinAs(join)); err != nil {
			return FanResult{}, fmt.Errorf("bench: join %d: %w", i, err)
		}
	}
	members, sender := conns[:o.Members], conns[o.Members]

	var (
		delivered atomic.Uint64
		wake      = make(chan struct{}, 1)
		wg        sync.WaitGroup
	)
	for _, c := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readPushes(c, func() {
				if delivered.Add(1)%uint64(o.Members) == 0 {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			})
		}()
	}
	var answered atomic.Uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		readPushes(sender, func() { answered.Add(1) }) // the blasts' answers
	}()
	defer func() {
		for _, c := range conns {
			c.SetDeadline(time.Now())
		}
		wg.Wait()
	}()

	round := NewHistogram()
	blast := frameOf(RouteBlast, 1, o.Body)
	sentAt := map[uint64]time.Time{}
	var seq uint64
	measureAt, endAt := time.Now().Add(o.Warmup), time.Now().Add(o.Warmup+o.Duration)
	var p0, b0 uint64
	measuring := false
	tick := time.NewTimer(time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		if !measuring && now.After(measureAt) {
			measuring, p0, b0 = true, delivered.Load(), answered.Load()
			measureAt = now
		}
		if now.After(endAt) {
			return FanResult{Pushes: delivered.Load() - p0, Blasts: answered.Load() - b0, Elapsed: now.Sub(measureAt), Round: round}, nil
		}
		done := delivered.Load() / uint64(o.Members)
		for k := range sentAt {
			if k <= done {
				if measuring {
					round.Record(now.Sub(sentAt[k]))
				}
				delete(sentAt, k)
			}
		}
		for seq < done+uint64(o.InFlight) {
			seq++
			binary.BigEndian.PutUint64(blast[12:], seq)
			binary.BigEndian.PutUint32(blast[8:], uint32(seq))
			if _, err := sender.Write(blast); err != nil {
				return FanResult{}, err
			}
			sentAt[seq] = time.Now()
		}
		// Wait for the next whole blast's worth of pushes; the timer only
		// bounds the wait, so that the run ends on time.
		tick.Reset(10 * time.Millisecond)
		select {
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			return FanResult{}, ctx.Err()
		}
	}
}

// joinAs is the join frame with request_id loginID, as login expects.
func joinAs(join []byte) []byte {
	f := append([]byte(nil), join...)
	binary.BigEndian.PutUint32(f[8:], loginID)
	return f
}

// readPushes reads idlen frames from c until it fails, calling got for
// each push (request_id 0) or, on the sender, each answer.
func readPushes(c net.Conn, got func()) {
	eachFrame(c, make([]byte, 16<<10), func([]byte) { got() })
}

// eachFrame reads idlen frames from c into buf until c fails or a frame
// does not fit buf, handing fn each whole frame (its u32 length
// included), which fn must not keep.
func eachFrame(c net.Conn, buf []byte, fn func(frame []byte)) {
	var r, w int
	for {
		n, err := c.Read(buf[w:])
		if err != nil {
			return
		}
		w += n
		for w-r >= 12 {
			length := int(binary.BigEndian.Uint32(buf[r:]))
			if length < 8 || 4+length > len(buf) {
				return
			}
			if w-r < 4+length {
				break
			}
			fn(buf[r : r+4+length])
			r += 4 + length
		}
		if r == w {
			r, w = 0, 0
		} else if r > len(buf)/2 {
			w = copy(buf, buf[r:w])
			r = 0
		}
	}
}

// FanServer is the fan-out baseline: a plain Go server speaking idlen that
// keeps every connection whose first request is a join, and answers a
// blast by writing the same push frame to each member's socket in a loop,
// one Write each, then answering the sender.
type FanServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex // guards members
	members []net.Conn
}

// NewFanServer listens on addr (use 127.0.0.1:0) and serves until Close.
func NewFanServer(addr string) (*FanServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &FanServer{ln: ln}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the bound address.
func (s *FanServer) Addr() string { return s.ln.Addr().String() }

// Close stops accepting and waits for every connection to end; clients must
// close their side.
func (s *FanServer) Close() {
	s.ln.Close()
	s.wg.Wait()
}

func (s *FanServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.serve(c)
			s.mu.Lock()
			for i, m := range s.members {
				if m == c {
					s.members = append(s.members[:i:i], s.members[i+1:]...)
					break
				}
			}
			s.mu.Unlock()
		}()
	}
}

func (s *FanServer) serve(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(c, buf[:12]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(buf))
		if n < 8 || n+4 > len(buf) {
			return
		}
		if _, err := io.ReadFull(c, buf[12:4+n]); err != nil {
			return
		}
		route := uint32(buf[5])<<16 | uint32(buf[6])<<8 | uint32(buf[7])
		answer := append([]byte(nil), buf[:12]...)
		binary.BigEndian.PutUint32(answer, 8)
		switch route {
		case RouteJoin:
			s.mu.Lock()
			s.members = append(s.members, c)
			s.mu.Unlock()
		case RouteBlast:
			push := frameOf(RoutePush, 0, buf[12:4+n])
			s.mu.Lock()
			members := s.members // never written in place: a leave copies
			s.mu.Unlock()
			for _, m := range members {
				m.Write(push) // a member that left is the run's end
			}
		}
		if _, err := c.Write(answer); err != nil {
			return
		}
	}
}
