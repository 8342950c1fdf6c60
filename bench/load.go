// Package bench is Shield's load tool: a closed-loop load generator that
// keeps a fixed number of idlen requests in flight on each of many
// connections (over TCP, TLS or WebSocket), a latency histogram, and the
// baseline echo server that the gateway is measured against.
package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Options describe one load run.
type Options struct {
	Addr     string
	Conns    int           // connections
	InFlight int           // requests outstanding per connection
	Duration time.Duration // measured time, after Warmup
	Warmup   time.Duration
	Route    uint32
	Body     []byte

	// Transport is tcp (the default) or ws: a WebSocket upgrade at Path
	// (default /ws), then one idlen frame per binary message.
	Transport string
	Path      string
	// TLS, when set, runs every connection over TLS (wss:// for ws).
	TLS *tls.Config
}

// Result is what a run measured.
type Result struct {
	Requests uint64
	Errors   uint64 // error frames (route 0 answers)
	Elapsed  time.Duration
	Latency  *Histogram
}

// RPS is answered requests per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// String is one line for a report.
func (r Result) String() string {
	return fmt.Sprintf("%9.0f req/s  p50 %7s  p99 %7s  max %7s  errors %d",
		r.RPS(), r.Latency.Quantile(0.50), r.Latency.Quantile(0.99), r.Latency.Max(), r.Errors)
}

// Run drives the load and returns when Duration has passed after Warmup, or
// ctx ends. Each connection has one writer and one reader goroutine; a
// request is sent again as soon as its answer arrives (closed loop), so
// InFlight stays constant.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Conns <= 0 || o.InFlight <= 0 {
		return Result{}, errors.New("bench: conns and in-flight must be positive")
	}
	conns := make([]loadConn, 0, o.Conns)
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	for i := 0; i < o.Conns; i++ {
		c, err := dial(ctx, o)
		if err != nil {
			return Result{}, fmt.Errorf("bench: dial %d: %w", i, err)
		}
		conns = append(conns, c)
	}

	var (
		measuring atomic.Bool
		requests  atomic.Uint64
		errs      atomic.Uint64
		hmu       sync.Mutex
		hist      = NewHistogram()
		wg        sync.WaitGroup
	)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, c := range conns {
		wg.Add(1)
		go func(c loadConn) {
			defer wg.Done()
			local := NewHistogram()
			n, e := c.drive(runCtx, o, &measuring, local)
			requests.Add(n)
			errs.Add(e)
			hmu.Lock()
			hist.Merge(local)
			hmu.Unlock()
		}(c)
	}
	sleep(runCtx, o.Warmup)
	measuring.Store(true)
	start := time.Now()
	sleep(runCtx, o.Duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	cancel()
	for _, c := range conns {
		c.stop() // unblock readers and writers
	}
	wg.Wait()
	return Result{Requests: requests.Load(), Errors: errs.Load(), Elapsed: elapsed, Latency: hist}, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// loadConn is one loaded connection.
type loadConn interface {
	// drive runs the connection's slots until ctx ends or stop.
	drive(ctx context.Context, o Options, measuring *atomic.Bool, h *Histogram) (n, errs uint64)
	stop()  // unblocks drive
	close() // releases the connection
}

// dial opens one connection as o says.
func dial(ctx context.Context, o Options) (loadConn, error) {
	var d net.Dialer
	switch o.Transport {
	case "", "tcp":
		if o.TLS != nil {
			td := tls.Dialer{NetDialer: &d, Config: o.TLS}
			c, err := td.DialContext(ctx, "tcp", o.Addr)
			if err != nil {
				return nil, err
			}
			return streamConn{c}, nil
		}
		c, err := d.DialContext(ctx, "tcp", o.Addr)
		if err != nil {
			return nil, err
		}
		return streamConn{c}, nil
	case "ws":
		return dialWS(ctx, o)
	default:
		return nil, fmt.Errorf("bench: unknown transport %q", o.Transport)
	}
}

// streamConn is a TCP or TLS connection carrying idlen as it is.
type streamConn struct{ net.Conn }

func (c streamConn) drive(ctx context.Context, o Options, measuring *atomic.Bool, h *Histogram) (n, errs uint64) {
	return drive(ctx, c.Conn, o, measuring, h)
}
func (c streamConn) stop()  { c.SetDeadline(time.Now()) }
func (c streamConn) close() { c.Close() }

// slots is one connection's closed loop: InFlight request slots (the
// request_id is the slot), each re-sent as soon as its answer arrives. Only
// answers that arrive while measuring are counted.
type slots struct {
	o         Options
	sent      []atomic.Int64 // slot -> send time, unix ns
	next      chan uint32    // slots ready to send
	measuring *atomic.Bool
	h         *Histogram
	n, errs   uint64
}

func newSlots(o Options, measuring *atomic.Bool, h *Histogram) *slots {
	s := &slots{o: o, sent: make([]atomic.Int64, o.InFlight+1), next: make(chan uint32, o.InFlight), measuring: measuring, h: h}
	for slot := 1; slot <= o.InFlight; slot++ {
		s.next <- uint32(slot)
	}
	return s
}

// answered accounts for a frame from the gateway and frees its slot; it
// reports false when the run is over.
func (s *slots) answered(ctx context.Context, route, slot uint32) bool {
	if slot == 0 || int(slot) > s.o.InFlight {
		return true // a push or notice: not ours
	}
	if s.measuring.Load() {
		s.n++
		if route == 0 {
			s.errs++
		}
		s.h.Record(time.Duration(time.Now().UnixNano() - s.sent[slot].Load()))
	}
	select {
	case s.next <- slot:
		return true
	case <-ctx.Done():
		return false
	}
}

// drive runs one stream connection's closed loop.
func drive(ctx context.Context, c net.Conn, o Options, measuring *atomic.Bool, h *Histogram) (n, errs uint64) {
	s := newSlots(o, measuring, h)
	sent, next := s.sent, s.next
	frame := make([]byte, 12+len(o.Body))
	binary.BigEndian.PutUint32(frame, uint32(8+len(o.Body)))
	frame[4] = 1
	frame[5], frame[6], frame[7] = byte(o.Route>>16), byte(o.Route>>8), byte(o.Route)
	copy(frame[12:], o.Body)

	go func() { // writer: batches every slot that is ready into one write
		bw := bufio.NewWriterSize(c, 64<<10)
		for {
			select {
			case <-ctx.Done():
				return
			case slot := <-next:
				for {
					sent[slot].Store(time.Now().UnixNano())
					binary.BigEndian.PutUint32(frame[8:], slot)
					bw.Write(frame)
					select {
					case slot = <-next:
						continue
					default:
					}
					break
				}
				if bw.Flush() != nil {
					return
				}
			}
		}
	}()

	br := bufio.NewReaderSize(c, 64<<10)
	var hdr [12]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return s.n, s.errs
		}
		length := binary.BigEndian.Uint32(hdr[:4])
		if length < 8 {
			return s.n, s.errs
		}
		if _, err := br.Discard(int(length) - 8); err != nil {
			return s.n, s.errs
		}
		route := uint32(hdr[5])<<16 | uint32(hdr[6])<<8 | uint32(hdr[7])
		if !s.answered(ctx, route, binary.BigEndian.Uint32(hdr[8:])) {
			return s.n, s.errs
		}
	}
}
