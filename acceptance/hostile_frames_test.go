package acceptance

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostileConns is how many connections TestClaimedLengthCostsNothing
// holds: 2,000, or 200 under -short; SHIELD_HOSTILE_CONNS overrides it
// (the figure is 15,000, which needs `ulimit -n` above that).
func hostileConns(t testing.TB) int {
	if s := os.Getenv("SHIELD_HOSTILE_CONNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SHIELD_HOSTILE_CONNS=%q", s)
		}
		return n
	}
	if testing.Short() {
		return 200
	}
	return 2000
}

// loginMany logs every connection in as its own player (user prefix-i),
// at most 256 at once, and returns a reader for each.
func loginMany(t testing.TB, conns []net.Conn, prefix string) []*bufio.Reader {
	t.Helper()
	readers := make([]*bufio.Reader, len(conns))
	var failed atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for i, c := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			readers[i] = bufio.NewReader(c)
			c.SetDeadline(time.Now().Add(60 * time.Second))
			defer c.SetDeadline(time.Time{})
			if _, err := c.Write(idlenFrame(hLogin, 1, fmt.Sprintf(`{"user":"%s-%d"}`, prefix, i))); err != nil {
				failed.Add(1)
				first.CompareAndSwap(nil, err.Error())
				return
			}
			route, _, body, err := readIdlen(readers[i])
			if err != nil || route != hLogin {
				failed.Add(1)
				first.CompareAndSwap(nil, fmt.Sprintf("route %d %s %v", route, body, err))
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d logins failed; the first: %v", n, len(conns), first.Load())
	}
	return readers
}

// TestClaimedLengthCostsNothing (issue 19, SPEC §3): logged-in sessions
// that each send only the 12 bytes of an idlen header claiming a
// 65,536-byte frame (the listener's max_frame_bytes) hold no more memory
// than idle ones: the claim allocates nothing until the bytes arrive.
// The red team held 1.28 GiB of heap with 18,000 such connections
// (readBody allocated the claimed length at once). The frame, once its
// body does arrive, is read and served as usual.
func TestClaimedLengthCostsNothing(t *testing.T) {
	n := hostileConns(t)
	h := startHostile(t, hostileSetup{session: "max_sessions: 100000, idle_timeout: 300s"}, procOptions{})
	port := portOf(t, h.game)
	conns := dialMany(t, h.game, n)
	readers := loginMany(t, conns, "claim")
	if got := h.metric(t, "shield_sessions"); got != float64(n) {
		t.Fatalf("%v sessions, want %d", got, n)
	}
	heap0, rss0 := h.liveHeap(t), h.rss(t)

	// The header of a frame as long as the listener allows: 8 header
	// bytes and 65,528 of body, none of which will come.
	const claim = 65536
	hdr := binary.BigEndian.AppendUint32(nil, claim)
	hdr = append(hdr, 1, 0, 0, hBig)
	hdr = binary.BigEndian.AppendUint32(hdr, 7)
	for i, c := range conns {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(hdr); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	// The gateway has read every header when its ends of the connections
	// have nothing left unread.
	var sockets, unread int
	if !pollFor(60*time.Second, func() bool {
		sockets, unread = unreadOnPort(t, port)
		return sockets >= n && unread == 0
	}) {
		t.Fatalf("the gateway did not read the headers: %d sockets on port %d, %d bytes unread", sockets, port, unread)
	}
	heap1, rss1 := h.liveHeap(t), h.rss(t)
	perHeap, perRSS := (heap1-heap0)/float64(n), (rss1-rss0)/float64(n)
	t.Logf("%d logged-in sessions: live heap %s -> %s (%+.0f B/session), RSS %s -> %s (%+.0f B/session) after a %d-byte claim each",
		n, mib(heap0), mib(heap1), perHeap, mib(rss0), mib(rss1), perRSS, claim)
	// A claim may cost a few pooled chunks while bytes arrive; with none
	// arriving it costs nothing, and 16 KiB is a quarter of the claim.
	const bound = 16 << 10
	if perHeap > bound {
		t.Errorf("the live heap grew %.0f bytes per claiming session, over %d", perHeap, bound)
	}
	if perRSS > bound {
		t.Errorf("RSS grew %.0f bytes per claiming session, over %d", perRSS, bound)
	}

	// The body completes one of the frames: it is read whole and served.
	body := `{"size":3,"p":"` + strings.Repeat("p", claim-8-len(`{"size":3,"p":""}`)) + `"}`
	c := conns[0]
	c.SetDeadline(time.Now().Add(patience))
	if _, err := c.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	route, id, resp, err := readIdlen(readers[0])
	if err != nil || route != hBig || id != 7 || string(resp) != `{"pad":"xxx"}` {
		t.Fatalf("the completed frame's answer: route %d id %d %q %v", route, id, resp, err)
	}
	if got := h.metric(t, "shield_sessions"); got != float64(n) {
		t.Errorf("%v sessions after the claims, want %d: none is closed", got, n)
	}
}
