package gateway

import (
	"time"

	"github.com/shieldrpc/shield/session"
)

// An idle session costs what its connection holds while it waits for the
// next frame. Buffers are given back before the wait (transport.go,
// rawread.go), which left the read loop's goroutine: serving one frame
// grows its stack to 4 KiB, and Go never gives that back while the
// goroutine waits in a read (it shrinks a stack only when under a quarter
// of it is in use, counting 800 bytes of guard), so an idle session was
// 4 KiB of stack and 3.4 KiB of heap (BENCHMARKS.md, "Idle sessions").
//
// So a plain TCP connection that has read no frame for parkAfter parks:
// its read loop hands the socket to the gateway's parker and its
// goroutine ends, stack and all. The parker (park_linux.go) is one
// goroutine waiting on an epoll instance of its own for every parked
// socket, and on the earliest idle_timeout among them. When a parked
// socket becomes readable (a frame, the peer's close), its idle_timeout
// runs out, or the write side closes it, the parker starts a fresh
// goroutine that goes on with the read loop where it left off. A session
// that sends a heartbeat every few seconds pays one goroutine start per
// heartbeat; one that is busy never parks. Elsewhere than Linux, and
// for TLS and WebSocket connections, nothing parks.

// parkAfter is how long a read loop waits for its next frame on its own
// goroutine before its connection parks.
const parkAfter = time.Second

// parked is the reason readLoop returns when its connection should park.
// It never reaches a session.
const parked session.Reason = "(parked)"

// parkState is a connection's place in the parker while parked.
type parkState struct {
	at  int32 // 1 + its index in the parker's due heap; 0 when not parked
	fd  int32 // the parked socket
	due int64 // its idle_timeout, in Unix nanoseconds
}

// parkable reports whether fc's read loop may park: a plain TCP
// connection on a system with a parker.
func parkable(fc frameConn) bool {
	s, ok := fc.(*streamConn)
	return ok && s.fd >= 0 && canPark
}

// closeFC closes the connection from its write side. A parked read loop
// is resumed first, while its socket is still open, so that it sees the
// close and ends the connection; shut, set before, keeps it from parking
// again.
func (c *conn) closeFC(r session.Reason) {
	c.shut.Store(true)
	c.g.parks.wake(c)
	c.fc.Close(r)
}

// dueHeap orders the parked connections by their idle_timeout (a binary
// min-heap of *conn; each knows its index, for removal).
type dueHeap []*conn

func (h *dueHeap) push(c *conn) {
	*h = append(*h, c)
	h.up(len(*h) - 1)
}

// remove takes c out of the heap.
func (h *dueHeap) remove(c *conn) {
	i := int(c.park.at) - 1
	last := len(*h) - 1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	if i != last {
		h.down(i)
		h.up(i)
	}
	c.park.at = 0
}

func (h dueHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].park.at, h[j].park.at = int32(i+1), int32(j+1)
}

func (h dueHeap) up(i int) {
	h[i].park.at = int32(i + 1)
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].park.due <= h[i].park.due {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h dueHeap) down(i int) {
	for {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].park.due < h[least].park.due {
			least = l
		}
		if r < len(h) && h[r].park.due < h[least].park.due {
			least = r
		}
		if least == i {
			return
		}
		h.swap(i, least)
		i = least
	}
}
