package acceptance

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
	"github.com/shieldrpc/shield/statesync"
)

// startSlow is the gateway of rooms_slow_test.go: the lobby and a room kind
// "flood" whose every tick changes 32 KB of state and reports it on route
// 3101. A write blocked for slowWriteTimeout closes a session; a session
// queues 256 KiB at most. The tick budget is the most there is, so that a
// loaded machine under -race does not fail a tick (and close the room):
// the test is about the sockets, not the CPU.
func startSlow(t *testing.T) *roomsRig {
	return startRooms(t, roomsConf{node: "gw-slow", timeout: 90 * time.Second,
		listener: "protocol: {max_frame_bytes: 1048576}", session: "write_timeout: 1s, outbound_queue_bytes: 262144",
		kinds: roomKind("flood", "rooms_slow_flood.lua", "tick_hz: 20, tick_budget: 1s",
			"{id: 3101, name: report, binding: report, direction: s2c}")})
}

const (
	slowWriteTimeout = time.Second // startSlow's session.write_timeout
	slowReport       = 3101
)

// slowReader is a member that reads everything: it tracks the room's state
// and checks, at each version it applies, that its state is exactly what
// the room reported for that tick.
type slowReader struct {
	name string
	c    *client.Client

	mu       sync.Mutex
	tr       statesync.Tracker
	reports  map[uint64]string // tick -> the reported state, as canonical JSON
	versions []uint64          // the versions applied, in order
	kinds    []statesync.FrameKind
	compared int      // versions checked against a report
	errs     []string // what went wrong, for the end of the test
}

// applied is the number of versions the reader applied so far.
func (r *slowReader) applied() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.versions)
}

// broken is the first thing that went wrong for the reader, or "".
func (r *slowReader) broken() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) == 0 {
		return ""
	}
	return r.errs[0]
}

func (r *slowReader) fail(format string, args ...any) {
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

// canonicalJSON is raw re-encoded with sorted keys and numbers as
// float64s: two JSON values are equal when their canonical texts are.
func canonicalJSON(raw []byte) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// onReport takes the room's report of a tick.
func (r *slowReader) onReport(body []byte) {
	var rep struct {
		Tick  uint64          `json:"tick"`
		State json.RawMessage `json:"state"`
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := json.Unmarshal(body, &rep); err != nil {
		r.fail("report %.80s: %v", body, err)
		return
	}
	s, err := canonicalJSON(rep.State)
	if err != nil {
		r.fail("report of tick %d: %v", rep.Tick, err)
		return
	}
	r.reports[rep.Tick] = s
}

// onState takes a state frame. The room reports a tick before it syncs
// it, on the same session, so the report of each version it pushes to a
// member arrives before the version's frame: every version but the first
// (a SNAPSHOT of a version that may predate the membership) must have one.
func (r *slowReader) onState(body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, err := r.tr.Receive(body)
	if err != nil {
		r.fail("state frame: %v", err)
	}
	switch u.Status {
	case statesync.Partial:
		return
	case statesync.Applied:
	default:
		r.fail("a %v frame (version %d): %s", u.Status, u.Version, u.Why)
		return
	}
	r.versions = append(r.versions, u.Version)
	r.kinds = append(r.kinds, u.Kind)
	b, err := json.Marshal(r.tr.State())
	if err != nil {
		r.fail("version %d: %v", u.Version, err)
		return
	}
	got, err := canonicalJSON(b)
	if err != nil {
		r.fail("version %d: %v", u.Version, err)
		return
	}
	want, ok := r.reports[u.Version]
	switch {
	case ok && got != want:
		r.fail("version %d: tracked state %.120s..., the room reported %.120s...", u.Version, got, want)
	case ok:
		r.compared++
	case len(r.versions) > 1:
		r.fail("version %d applied, but the room reported no tick %d", u.Version, u.Version)
	}
	for tick := range r.reports {
		if tick <= u.Version {
			delete(r.reports, tick)
		}
	}
}

// check reports what went wrong for the reader: an error seen, a version
// skipped (every tick changes the state, so every tick is a version it
// must get), or a first frame that is not a SNAPSHOT.
func (r *slowReader) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		t.Errorf("%s: %s", r.name, e)
	}
	if len(r.versions) == 0 {
		t.Fatalf("%s: no state", r.name)
	}
	if r.kinds[0] != statesync.SnapshotFrame {
		t.Errorf("%s: the first frame is a %v, want a SNAPSHOT", r.name, r.kinds[0])
	}
	for i := 1; i < len(r.versions); i++ {
		if r.versions[i] != r.versions[i-1]+1 || r.kinds[i] != statesync.DeltaFrame {
			t.Errorf("%s: a %v of version %d after version %d: a tick's state was missed", r.name, r.kinds[i], r.versions[i], r.versions[i-1])
			break
		}
	}
	if r.compared < len(r.versions)-1 {
		t.Errorf("%s: %d of %d versions checked against the room's report", r.name, r.compared, len(r.versions))
	}
	t.Logf("%s: versions %d..%d, %d checked against the room's report", r.name, r.versions[0], r.versions[len(r.versions)-1], r.compared)
}

// slowFrame is a request frame with a JSON body.
func slowFrame(route uint32, id uint64, body any) envelope.Frame {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return envelope.Frame{Kind: envelope.Request, RouteID: route, RequestID: id, Body: b}
}

// slowAnswer reads w's frames up to the answer of request id, which must
// be a response.
func slowAnswer(t *testing.T, w *wiretest.Conn, id uint64, what string) envelope.Frame {
	t.Helper()
	for {
		f, err := w.Next()
		if err != nil {
			t.Fatalf("%s: %v; seen %v", what, err, w.Seen)
		}
		if f.RequestID != id || f.Kind == envelope.Push {
			continue
		}
		if f.Kind != envelope.Response {
			t.Fatalf("%s: %v %s %s", what, f.Kind, f.Code, f.Message)
		}
		return f
	}
}

// TestNeverReadingMember is docs/rooms.md §15's slow-consumer row (§10.1,
// §7.3, §12): a member whose socket never reads does not slow the room.
// Two members read; a third logs in and joins over a raw socket, then
// stops reading. Every tick changes 32 KB of state, so its socket's
// buffers and then its queue fill, and its frames are refused
// (queue_full). (Shrinking its receive buffer would fill it no sooner on
// loopback, and would make reading what is left, at the end, take
// minutes.) While it is stuck the readers keep getting frames; they get
// every tick's version, each a DELTA from the one before, and their
// tracked state equals, at every version, the state the room reported for
// that tick. The stuck member is closed as slow_consumer (no notice)
// within session.write_timeout + 1 s of its queue filling, and leaves the
// room with that reason; the room goes on ticking for the readers.
func TestNeverReadingMember(t *testing.T) {
	g := startSlow(t)
	s := g.s
	reader := func(user string) *slowReader {
		c := g.dialPlain(client.Options{MaxFrameBytes: 1 << 20})
		r := &slowReader{name: user, c: c, reports: map[uint64]string{}}
		c.OnPush(slowReport, r.onReport)
		c.OnPush(roomsState, r.onState)
		g.login(c, user)
		return r
	}
	alice, bob := reader("alice"), reader("bob")
	room := g.makeOn(alice.c, "flood", nil)
	for _, r := range []*slowReader{alice, bob} {
		if err := r.c.Call(g.ctx, roomsJoin, map[string]any{"room": room}, nil); err != nil {
			t.Fatalf("%s's join: %v", r.name, err)
		}
	}
	wiretest.Eventually(t, "the readers' first versions", func() bool { return alice.applied() > 2 && bob.applied() > 2 })

	// The stuck member: logged in and joined over a raw socket, which
	// reads up to the join's answer and then never again.
	stuck := wiretest.Dial(t, "stuck", s.Addr("game"), "idlen")
	stuck.Send(slowFrame(1, 1, map[string]string{"user": "stuck"}))
	slowAnswer(t, stuck, 1, "the stuck member's login")
	stuck.Send(slowFrame(65522, 2, map[string]string{"room": room}))
	slowAnswer(t, stuck, 2, "the stuck member's join")
	stopped := time.Now()

	// Watch it fill and be closed: every poll bounded by one deadline,
	// generous, for the kernel's buffers are what they are.
	var full, closed time.Time
	var atFull, atClosed [2]int
	deadline := stopped.Add(60 * time.Second)
	for closed.IsZero() {
		now := time.Now()
		if now.After(deadline) {
			t.Fatalf("the stuck member was not closed within %v of its last read (queue full: %v)", deadline.Sub(stopped), !full.IsZero())
		}
		for _, r := range []*slowReader{alice, bob} {
			if e := r.broken(); e != "" {
				t.Fatalf("%s, while the stuck member was stuck: %s", r.name, e)
			}
		}
		if full.IsZero() && s.LimitHits("outbound_queue") > 0 {
			full, atFull = now, [2]int{alice.applied(), bob.applied()}
		}
		if s.ClosedTotal("slow_consumer") > 0 {
			closed, atClosed = now, [2]int{alice.applied(), bob.applied()}
		}
		time.Sleep(2 * time.Millisecond)
	}
	if full.IsZero() {
		t.Fatalf("the stuck member was closed %v after its last read, but no frame of it was ever refused: its socket did not fill", closed.Sub(stopped))
	}
	t.Logf("the stuck member: queue full %v after its last read, closed %v after that", full.Sub(stopped), closed.Sub(full))
	if took := closed.Sub(full); took > slowWriteTimeout+time.Second {
		t.Errorf("the stuck member was closed %v after its queue filled, want within write_timeout %v + 1s", took, slowWriteTimeout)
	}
	for i, r := range []*slowReader{alice, bob} {
		if atClosed[i] <= atFull[i] {
			t.Errorf("%s applied no version while the stuck member was stuck (%d at full, %d at the close)", r.name, atFull[i], atClosed[i])
		}
	}
	s.Logs.WaitFor(t, "left flood", "player_id", "stuck", "reason", "slow_consumer")

	// The room goes on for the readers.
	wiretest.Eventually(t, "ten more versions for the readers", func() bool {
		return alice.applied() >= atClosed[0]+10 && bob.applied() >= atClosed[1]+10
	})
	if n := s.ClosedTotal("slow_consumer"); n != 1 {
		t.Errorf("%v sessions closed as slow consumers, want only the stuck one", n)
	}
	for _, r := range []*slowReader{alice, bob} {
		if err := r.c.Err(); err != nil {
			t.Errorf("%s's client ended: %v", r.name, err)
		}
		r.check(t)
	}

	// What reached the stuck member: pushes (the last maybe cut short by
	// the write that timed out), then the end; no notice. A receive
	// buffer as big as a reader's drains it at once.
	drain := time.Now()
	pushes := 0
	for {
		f, err := stuck.Next()
		if err != nil {
			var pe *envelope.ProtocolError
			if !wiretest.PeerGone(err) && !(errors.As(err, &pe) && pe.Reason == envelope.ReasonTruncated) {
				t.Fatalf("the stuck member after %d pushes: %v, want the end of the connection", pushes, err)
			}
			break
		}
		if f.Kind != envelope.Push {
			t.Fatalf("the stuck member read a %v %q after %d pushes: a slow consumer gets no notice", f.Kind, f.Code, pushes)
		}
		pushes++
	}
	if pushes == 0 {
		t.Error("no push reached the stuck member")
	}
	t.Logf("the stuck member read %d pushes in %v after its close", pushes, time.Since(drain))
}
