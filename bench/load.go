// Package bench is Shield's load tool: a closed-loop load generator that
// keeps a fixed number of idlen requests in flight on each of many
// connections (over TCP, TLS or WebSocket), a latency histogram, and the
// baseline echo server that the gateway is measured against.
package bench

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
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
	// Login, when not 0, is a route each connection sends one request on
	// before the loop starts, with the body "bench-<run>-<conn>", and
	// whose answer it waits for: the echo config's login binds the
	// session to that player, so the loop runs on logged-in sessions as
	// a game's traffic does (before login, SPEC §5 lets a session's frames
	// into its service one at a time).
	Login uint32

	// Transport is tcp (the default) or ws: a WebSocket upgrade at Path
	// (default /ws), then one idlen frame per binary message.
	Transport string
	Path      string
	// TLS, when set, runs every connection over TLS (wss:// for ws).
	TLS *tls.Config
	// CPU, when set, reads the CPU time the loaded server has used so
	// far; the run reads it as the measured time begins and ends, and
	// reports the difference per answered request.
	CPU func() (time.Duration, error)
	// NodeCPU, when set, reads the CPU time of a second server process
	// in the same run (a cluster's service node behind the gateway it
	// loads), reported per request beside CPU's.
	NodeCPU func() (time.Duration, error)
	// LoadCPU also measures this process's own CPU time, the load
	// generator's when the server is another process: a closed loop on a
	// shared machine runs at what the two together cost a request, and
	// the generator's share is not fixed (it grows with every sleep and
	// wake-up a slower server makes it take).
	LoadCPU bool
	// Mark, when set, is called as the measured time begins (true) and
	// ends (false): to profile just that.
	Mark func(begin bool)
	// Tail, when not 0, fills Result.Bursts: how the answers slower than
	// Tail spread over the measured time, evenly or in bursts. Its counts
	// take 8 bytes a millisecond a connection (2.4 MB for 50 connections
	// and 5 s), allocated before the run.
	Tail time.Duration
}

// Result is what a run measured.
type Result struct {
	Requests uint64
	Errors   uint64 // error frames (route 0 answers)
	Elapsed  time.Duration
	Latency  *Histogram
	CPU      time.Duration // the server's CPU time while measuring, when Options.CPU was set
	NodeCPU  time.Duration // the second server's, when Options.NodeCPU was set
	Load     time.Duration // this process's, when Options.LoadCPU was set
	Bursts   *Bursts       // when Options.Tail was set
}

// RPS is answered requests per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// CPUPerRequest is the server's CPU time per answered request, 0 when not
// measured.
func (r Result) CPUPerRequest() time.Duration { return r.perRequest(r.CPU) }

// LoadPerRequest is the load generator's CPU time per answered request, 0
// when not measured.
func (r Result) LoadPerRequest() time.Duration { return r.perRequest(r.Load) }

func (r Result) perRequest(d time.Duration) time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return d / time.Duration(r.Requests)
}

// String is one line for a report.
func (r Result) String() string {
	cpu := ""
	if r.CPU > 0 {
		cpu = fmt.Sprintf("  cpu %5.2fµs/req", float64(r.CPUPerRequest())/1e3)
	}
	if r.NodeCPU > 0 {
		cpu += fmt.Sprintf("  node cpu %5.2fµs/req", float64(r.perRequest(r.NodeCPU))/1e3)
	}
	if r.Load > 0 {
		cpu += fmt.Sprintf("  load %5.2fµs/req", float64(r.LoadPerRequest())/1e3)
	}
	return fmt.Sprintf("%9.0f req/s  p50 %7s  p99 %7s  max %7s%s  errors %d",
		r.RPS(), r.Latency.Quantile(0.50), r.Latency.Quantile(0.99), r.Latency.Max(), cpu, r.Errors)
}

// Run drives the load and returns when Duration has passed after Warmup, or
// ctx ends. Each connection is driven by one goroutine that reads the
// answers and writes the requests they free itself (closed loop), so
// InFlight stays constant and the generator costs little next to what it
// loads.
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
	run := runs.Add(1)
	for i := 0; i < o.Conns; i++ {
		c, err := dial(ctx, o)
		if err != nil {
			return Result{}, fmt.Errorf("bench: dial %d: %w", i, err)
		}
		conns = append(conns, c)
		if o.Login != 0 {
			if err := c.login(ctx, frameOf(o.Login, loginID, []byte(fmt.Sprintf("bench-%d-%d-%d", os.Getpid(), run, i)))); err != nil {
				return Result{}, fmt.Errorf("bench: login %d: %w", i, err)
			}
		}
	}

	var (
		requests atomic.Uint64
		errs     atomic.Uint64
		hmu      sync.Mutex
		hist     = NewHistogram()
		wins     *windows // every connection's, merged, when o.Tail is set
		wg       sync.WaitGroup
	)
	m := &measure{}
	if o.Tail > 0 {
		wins = newWindows(o.Tail, o.Duration)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, c := range conns {
		wg.Add(1)
		go func(c loadConn) {
			defer wg.Done()
			local := NewHistogram()
			var w *windows
			if wins != nil {
				w = newWindows(o.Tail, o.Duration)
			}
			n, e := c.drive(runCtx, o, m, local, w)
			requests.Add(n)
			errs.Add(e)
			hmu.Lock()
			hist.Merge(local)
			if w != nil {
				wins.merge(w)
			}
			hmu.Unlock()
		}(c)
	}
	sleep(runCtx, o.Warmup)
	var cpu0, cpu1, node0, node1, load0, load1 time.Duration
	var cpuErr error
	if o.CPU != nil {
		cpu0, cpuErr = o.CPU()
	}
	if o.NodeCPU != nil && cpuErr == nil {
		node0, cpuErr = o.NodeCPU()
	}
	if o.LoadCPU && cpuErr == nil {
		load0, cpuErr = ProcessCPU(0)
	}
	if o.Mark != nil {
		o.Mark(true)
	}
	start := time.Now()
	m.start.Store(start.UnixNano())
	m.on.Store(true)
	sleep(runCtx, o.Duration)
	m.on.Store(false)
	elapsed := time.Since(start)
	if o.Mark != nil {
		o.Mark(false)
	}
	if o.CPU != nil && cpuErr == nil {
		cpu1, cpuErr = o.CPU()
	}
	if o.NodeCPU != nil && cpuErr == nil {
		node1, cpuErr = o.NodeCPU()
	}
	if o.LoadCPU && cpuErr == nil {
		load1, cpuErr = ProcessCPU(0)
	}
	cancel()
	for _, c := range conns {
		c.stop() // unblock readers and writers
	}
	wg.Wait()
	if cpuErr != nil {
		return Result{}, fmt.Errorf("bench: reading the CPU time: %w", cpuErr)
	}
	res := Result{Requests: requests.Load(), Errors: errs.Load(), Elapsed: elapsed, Latency: hist,
		CPU: cpu1 - cpu0, NodeCPU: node1 - node0, Load: load1 - load0}
	if wins != nil {
		res.Bursts = wins.bursts(int((elapsed + window - 1) / window))
	}
	return res, nil
}

// measure is the measured time as the connections see it.
type measure struct {
	on    atomic.Bool
	start atomic.Int64 // unix ns, stored before on is set
}

// runs numbers the runs of this process, so that the player ids of one
// run's logins are not those of another's sessions still closing.
var runs atomic.Uint64

// loginID is the request_id of a login, past every slot's.
const loginID = math.MaxUint32

// frameOf is an idlen request frame, u32 length included.
func frameOf(route, requestID uint32, body []byte) []byte {
	f := make([]byte, 12+len(body))
	binary.BigEndian.PutUint32(f, uint32(8+len(body)))
	f[4] = 1
	f[5], f[6], f[7] = byte(route>>16), byte(route>>8), byte(route)
	binary.BigEndian.PutUint32(f[8:], requestID)
	copy(f[12:], body)
	return f
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
	drive(ctx context.Context, o Options, m *measure, h *Histogram, w *windows) (n, errs uint64)
	// login sends frame (an idlen request with request_id loginID, u32
	// length included) and waits for its answer, which must not be an
	// error.
	login(ctx context.Context, frame []byte) error
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

func (c streamConn) drive(ctx context.Context, o Options, m *measure, h *Histogram, w *windows) (n, errs uint64) {
	return drive(ctx, c.Conn, o, m, h, w)
}
func (c streamConn) stop() { c.SetDeadline(time.Now()) }

func (c streamConn) login(ctx context.Context, frame []byte) error {
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	} else {
		c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(frame); err != nil {
		return err
	}
	var hdr [12]byte
	for {
		if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n < 8 {
			return fmt.Errorf("frame length %d", n)
		}
		if _, err := io.CopyN(io.Discard, c.Conn, int64(n-8)); err != nil {
			return err
		}
		if binary.BigEndian.Uint32(hdr[8:]) == loginID {
			return loginAnswer(hdr[5:8])
		}
	}
}

// loginAnswer is the outcome of a login whose answer has route bytes rt: an
// error frame (route 0) fails it.
func loginAnswer(rt []byte) error {
	if rt[0]|rt[1]|rt[2] == 0 {
		return errors.New("the login was answered with an error frame")
	}
	return nil
}
func (c streamConn) close() { c.Close() }

// slots is one connection's closed loop: InFlight request slots (the
// request_id is the slot), each sent again as soon as its answer has been
// read. Only the connection's own goroutine touches it: the generator has
// no goroutine, lock or channel of its own between an answer and the next
// request, so what it measures is the server's cost, not its own. Only
// answers read while measuring are counted.
type slots struct {
	o       Options
	sent    []int64 // slot -> send time, unix ns
	m       *measure
	w       *windows // nil unless Options.Tail is set
	h       *Histogram
	n, errs uint64
}

func newSlots(o Options, m *measure, h *Histogram, w *windows) *slots {
	return &slots{o: o, sent: make([]int64, o.InFlight+1), m: m, h: h, w: w}
}

// answered accounts for a frame from the server read at now (unix ns) and
// reports the slot to send again, or 0 for a frame that frees none (a
// push or a notice).
func (s *slots) answered(now int64, route, slot uint32) uint32 {
	if slot == 0 || int(slot) > s.o.InFlight {
		return 0
	}
	if s.m.on.Load() {
		s.n++
		if route == 0 {
			s.errs++
		}
		took := time.Duration(now - s.sent[slot])
		s.h.Record(took)
		if s.w != nil {
			s.w.record(time.Duration(s.sent[slot]-s.m.start.Load()), took)
		}
	}
	return slot
}

// streamBuffer is the generator's read and write buffer size per
// connection: every answer one read brings, and the requests they free,
// fit one syscall each.
const streamBuffer = 64 << 10

// drive runs one stream connection's closed loop on the calling goroutine:
// it writes every slot's request, then reads what arrived, frees the slot
// of each complete answer in it and appends that slot's next request to
// the write buffer, and flushes only when no complete answer is left in
// the read buffer, so that the requests freed by one read go out in one
// write, as the raw echo server answers them.
func drive(ctx context.Context, c net.Conn, o Options, m *measure, h *Histogram, wins *windows) (n, errs uint64) {
	s := newSlots(o, m, h, wins)
	frame := make([]byte, 12+len(o.Body))
	binary.BigEndian.PutUint32(frame, uint32(8+len(o.Body)))
	frame[4] = 1
	frame[5], frame[6], frame[7] = byte(o.Route>>16), byte(o.Route>>8), byte(o.Route)
	copy(frame[12:], o.Body)
	wbuf := make([]byte, 0, streamBuffer)
	request := func(now int64, slot uint32) {
		s.sent[slot] = now
		binary.BigEndian.PutUint32(frame[8:], slot)
		wbuf = append(wbuf, frame...)
	}
	now := time.Now().UnixNano()
	for slot := 1; slot <= o.InFlight; slot++ {
		request(now, uint32(slot))
	}
	rbuf := make([]byte, streamBuffer)
	var r, w int // rbuf[r:w] is read and not yet parsed
	var skip int // bytes of an answer longer than rbuf still to discard
	for ctx.Err() == nil {
		if len(wbuf) > 0 {
			if _, err := c.Write(wbuf); err != nil {
				return s.n, s.errs
			}
			wbuf = wbuf[:0]
		}
		k, err := c.Read(rbuf[w:])
		if err != nil {
			return s.n, s.errs
		}
		w += k
		now = time.Now().UnixNano()
		for {
			if skip > 0 {
				d := min(skip, w-r)
				skip -= d
				r += d
				if skip > 0 {
					break
				}
			}
			if w-r < 12 {
				break
			}
			length := int(binary.BigEndian.Uint32(rbuf[r:]))
			if length < 8 {
				return s.n, s.errs
			}
			if 4+length > len(rbuf) {
				// Longer than the buffer: account for it by its header and
				// discard the rest as it comes.
				skip = 4 + length
			} else if w-r < 4+length {
				break
			}
			route := uint32(rbuf[r+5])<<16 | uint32(rbuf[r+6])<<8 | uint32(rbuf[r+7])
			if slot := s.answered(now, route, binary.BigEndian.Uint32(rbuf[r+8:])); slot != 0 {
				request(now, slot)
			}
			if skip == 0 {
				r += 4 + length
			}
		}
		// Keep the partial answer at the head of the buffer.
		if r == w {
			r, w = 0, 0
		} else if r > 0 && w == len(rbuf) || r > len(rbuf)/2 {
			w = copy(rbuf, rbuf[r:w])
			r = 0
		}
	}
	return s.n, s.errs
}
