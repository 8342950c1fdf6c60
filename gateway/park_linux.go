package gateway

import (
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

// canPark: Linux has epoll.
const canPark = true

// parker holds the gateway's parked connections (park.go). Its epoll
// instance is made at the first park, and is itself waited on through
// Go's poller (an epoll descriptor is readable while it has events), so
// the parker's goroutine holds no thread while it waits and its deadline
// is the earliest idle_timeout. stop ends it.
type parker struct {
	mu      sync.Mutex
	stopped bool
	ep      *os.File // the epoll instance; nil before the first park
	epfd    int
	raw     syscall.RawConn
	byFd    []*conn // the parked connection of each socket
	due     dueHeap
	done    chan struct{} // closed when the goroutine has ended
	free    freeing       // giving the parked read loops' stacks back to the OS

	// The goroutine's own: the events of the last wait, and the
	// connections to resume.
	events [128]syscall.EpollEvent
	n      int
	ready  []*conn
	poll   func(fd uintptr) bool
}

// park hands c's socket to the parker and reports whether it took it; if
// it did, c is the parker's (and then a fresh goroutine's) until resumed,
// and the caller must not touch it again.
func (p *parker) park(c *conn) bool {
	s := c.fc.(*streamConn)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || c.shut.Load() {
		return false
	}
	if p.ep == nil && !p.start() {
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(s.fd)}
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
		return false
	}
	for len(p.byFd) <= s.fd {
		p.byFd = append(p.byFd, nil)
	}
	p.byFd[s.fd] = c
	c.park.fd, c.park.due = int32(s.fd), c.deadline.UnixNano()
	p.due.push(c)
	if c.park.at == 1 { // the earliest now: the wait's deadline comes nearer
		_ = p.ep.SetReadDeadline(c.deadline)
	}
	p.free.parked(p, len(p.due), c.g.log)
	return true
}

// start makes the epoll instance and starts the goroutine; p.mu is held.
func (p *parker) start() bool {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return false
	}
	ep := os.NewFile(uintptr(fd), "parker-epoll") // non-blocking: Go's poller waits on it
	raw, err := ep.SyscallConn()
	if err != nil {
		ep.Close()
		return false
	}
	p.ep, p.epfd, p.raw, p.done = ep, fd, raw, make(chan struct{})
	p.poll = func(fd uintptr) bool {
		n, err := syscall.EpollWait(int(fd), p.events[:], 0)
		if err != nil || n <= 0 {
			return false // nothing yet (or EINTR): wait for the poller
		}
		p.n = n
		return true
	}
	go p.loop()
	return true
}

// remove takes c out of the parker, if it is parked; p.mu is held.
func (p *parker) remove(c *conn) bool {
	if c.park.at == 0 {
		return false
	}
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(c.park.fd), nil)
	p.byFd[c.park.fd] = nil
	p.due.remove(c)
	p.free.low = min(p.free.low, len(p.due))
	return true
}

// wake resumes c if it is parked.
func (p *parker) wake(c *conn) {
	p.mu.Lock()
	ok := p.remove(c)
	p.mu.Unlock()
	if ok {
		go c.unpark()
	}
}

// loop waits for parked sockets to become readable and for idle_timeouts
// to run out, and resumes their connections, until stop closes the epoll
// instance.
func (p *parker) loop() {
	defer close(p.done)
	for {
		p.n = 0
		err := p.raw.Read(p.poll)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed by stop
		}
		p.mu.Lock()
		for _, ev := range p.events[:p.n] {
			if fd := int(ev.Fd); fd < len(p.byFd) {
				// A stale event (its socket unparked meanwhile, perhaps
				// parked again) resumes one read loop for nothing: it
				// waits, and parks again.
				if c := p.byFd[fd]; c != nil && p.remove(c) {
					p.ready = append(p.ready, c)
				}
			}
		}
		now := time.Now().UnixNano()
		for len(p.due) > 0 && p.due[0].park.due <= now {
			c := p.due[0]
			p.remove(c)
			p.ready = append(p.ready, c) // its read loop finds the deadline passed
		}
		var next time.Time
		if len(p.due) > 0 {
			next = time.Unix(0, p.due[0].park.due)
		}
		_ = p.ep.SetReadDeadline(next)
		p.mu.Unlock()
		for i, c := range p.ready {
			go c.unpark()
			p.ready[i] = nil
		}
		p.ready = p.ready[:0]
	}
}

// stop ends the parker: connections still parked (none, once every
// connection has closed) are resumed.
func (p *parker) stop() {
	p.mu.Lock()
	p.stopped = true
	var left []*conn
	for len(p.due) > 0 {
		c := p.due[0]
		p.remove(c)
		left = append(left, c)
	}
	p.free.disarm()
	ep, done := p.ep, p.done
	p.mu.Unlock()
	p.free.wg.Wait()
	for _, c := range left {
		go c.unpark()
	}
	if ep != nil {
		ep.Close()
		<-done
	}
}

// A read loop that parks ends its goroutine, and Go frees the stack at
// the next collection, but only into its own heap: the pages stay the
// process's until the scavenger returns them, and it returns only what
// lies past the heap goal (raised by internal/gcfloor), so 15,000 parked
// sessions still held their 60 MiB of stacks in RSS (BENCHMARKS.md, "Idle
// sessions"). So once freeParks more connections are parked than at the
// fewest since the last time, the parker has debug.FreeOSMemory run once
// parking has been quiet for freeQuiet (a login wave parks over a second
// or more), or freeWait after, if it never is (sessions that park and
// resume by turns), and at most once per freeEvery. It is a forced
// collection, which a gateway whose sessions are parked can spare; one
// whose parked count holds steady pays nothing.
// (Variables only so that a test can shorten them: park_export_test.go.)
var (
	freeParks = 1024 // about 4 MiB of stacks
	freeQuiet = time.Second
	freeWait  = 10 * time.Second
	freeEvery = time.Minute
)

// freeing is the parker's giving back of stacks; its fields but wg are
// guarded by the parker's mu.
type freeing struct {
	low   int         // the fewest parked since the last time
	timer *time.Timer // armed: a FreeOSMemory is due
	armed time.Time   // when it was armed
	park  time.Time   // the latest park since
	last  time.Time   // when the last one ran
	wg    sync.WaitGroup
	done  bool // stop has run
}

// parked notes that n connections are parked now, arming the timer when
// enough parked since the fewest; p.mu is held.
func (f *freeing) parked(p *parker, n int, log *slog.Logger) {
	if f.timer != nil {
		f.park = time.Now()
	}
	if f.timer != nil || f.done || n-f.low < freeParks {
		return
	}
	f.armed, f.park = time.Now(), time.Now()
	f.wg.Add(1)
	f.timer = time.AfterFunc(max(freeQuiet, time.Until(f.last.Add(freeEvery))), func() { f.fire(p, log) })
}

// fire runs FreeOSMemory, or waits on while parking goes on.
func (f *freeing) fire(p *parker, log *slog.Logger) {
	p.mu.Lock()
	if f.done {
		p.mu.Unlock()
		f.wg.Done()
		return
	}
	now := time.Now()
	if quiet := now.Sub(f.park); quiet < freeQuiet && now.Sub(f.armed) < freeWait {
		f.timer.Reset(freeQuiet - quiet) // still parking: wait on
		p.mu.Unlock()
		return
	}
	defer f.wg.Done()
	f.timer, f.low, f.last = nil, len(p.due), now
	parked := len(p.due)
	p.mu.Unlock()
	debug.FreeOSMemory()
	log.Debug("gateway: parked read loops' stacks given back to the OS", "parked", parked, "took", time.Since(now))
}

// disarm stops the timer for good; p.mu is held. The caller then waits
// on wg for a FreeOSMemory already running.
func (f *freeing) disarm() {
	f.done = true
	if f.timer != nil && f.timer.Stop() {
		f.wg.Done()
	}
	f.timer = nil
}
