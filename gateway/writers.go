package gateway

import (
	"runtime"
	"sync"
)

// writers are the gateway's push writers: a goroutine per CPU, shared by
// every connection, that writes for the connections a push woke
// (conn.kick with soon). A fan-out's pushes reach hundreds of sessions at
// once: the pushing service only queues them, these write them (without
// blocking, as the owner of each write side does; what would block goes
// to that connection's write loop), in parallel with the service, and the
// pushes queued while a connection waits its turn share its write. They
// cost nothing per session, so an idle session still has no goroutine for
// writing. The Gateway owns them: Serve starts them, CloseAll stops them
// once every connection has ended.
type writers struct {
	mu     sync.Mutex // guards queue and stopped
	queue  []*conn    // connections whose write side they own, waiting their turn
	wake   chan struct{}
	stop   chan struct{}
	done   sync.WaitGroup
	closed sync.Once
}

// start runs one writer per CPU.
func (w *writers) start() {
	w.wake, w.stop = make(chan struct{}, 1), make(chan struct{})
	for range runtime.GOMAXPROCS(0) {
		w.done.Add(1)
		go w.run()
	}
}

// add hands c's write side, which the caller owns, to a writer.
func (w *writers) add(c *conn) {
	w.mu.Lock()
	w.queue = append(w.queue, c)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest connection waiting, or nil.
func (w *writers) next() *conn {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		if cap(w.queue) > 1024 {
			w.queue = nil // a fan-out burst should not pin its array
		}
		return nil
	}
	c := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	return c
}

// run writes for the connections handed over, until stopped. A writer that
// takes one wakes another first if more wait, so that both CPUs write
// during a fan-out.
func (w *writers) run() {
	defer w.done.Done()
	for {
		select {
		case <-w.wake:
		case <-w.stop:
			return
		}
		for c := w.next(); c != nil; c = w.next() {
			w.mu.Lock()
			more := len(w.queue) > 0
			w.mu.Unlock()
			if more {
				select {
				case w.wake <- struct{}{}:
				default:
				}
			}
			c.own()
		}
	}
}

// close stops the writers and waits for them. Nothing may be added after
// (every connection has ended).
func (w *writers) close() {
	w.closed.Do(func() {
		if w.stop == nil {
			return // never started
		}
		close(w.stop)
		w.done.Wait()
	})
}
