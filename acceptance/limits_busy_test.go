package acceptance

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestMaxInflight: with max_inflight 1 and a handler that sleeps, a second
// request from the same session gets client_rpc.busy at once and a notify
// is dropped (not run, counted); the slot frees when the first is
// answered; another session is not limited by this one.
func TestMaxInflight(t *testing.T) {
	e := startEdge(t, "  max_inflight: 1")
	w := e.raw(t, "idlen")
	busyBefore, hitBefore := e.Dropped("busy"), e.LimitHits("max_inflight")

	w.Send(
		envelope.Frame{Kind: envelope.Request, RouteID: rSleep, RequestID: 1, Body: []byte(`{"ms":300}`)},
		envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 2, Body: []byte(`2`)},
		envelope.Frame{Kind: envelope.Notify, RouteID: rMark, Body: []byte(`{"v":"while-busy"}`)},
	)
	// idlen errors are on route 0 with the request's id.
	f := w.Expect(envelope.Frame{Kind: envelope.Error, RequestID: 2, Code: string(codes.Busy)})
	if f.RouteID != 0 {
		t.Fatalf("idlen error on route %d", f.RouteID)
	}
	// Meanwhile another session is served.
	other := e.client(t, "idlen")
	call(t, other, rEcho, 7, nil)

	w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rSleep, RequestID: 1})
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 3, Body: []byte(`3`)})
	w.Expect(envelope.Frame{Kind: envelope.Response, RouteID: rEcho, RequestID: 3, Body: []byte(`3`)})
	if hasMark(marksOf(t, w, 4), "while-busy") {
		t.Fatal("the notify over max_inflight ran")
	}
	if got := e.Dropped("busy") - busyBefore; got != 2 {
		t.Fatalf("busy drops %v, want 2 (the request and the notify)", got)
	}
	if got := e.LimitHits("max_inflight") - hitBefore; got != 2 {
		t.Fatalf("max_inflight hits %v, want 2", got)
	}
	// A notify counts while its handler runs too: after it, the slot is
	// free again.
	w.Send(envelope.Frame{Kind: envelope.Notify, RouteID: rMark, Body: []byte(`{"v":"after"}`)})
	wiretest.Eventually(t, "the notify ran and freed its slot", func() bool {
		w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rMarks, RequestID: 5})
		f, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		return f.Kind == envelope.Response && hasMark(markValues(t, f.Body), "after")
	})
}

// TestMailboxFull: a service whose one-message mailbox is full (its VM
// busy in a handler that never yields, one more request waiting) answers
// further requests with client_rpc.busy at once, never a hang; a notify is
// dropped and counted. Each request comes from a session of its own: a
// session without a player_id has its frames judged one at a time (SPEC
// §5), so one session alone could never fill the lane.
func TestMailboxFull(t *testing.T) {
	e := startEdge(t, "")
	depth := func() int { return e.Srv.Runtime.MailboxDepth("spin") }
	busyBefore, hitBefore := e.Dropped("busy"), e.LimitHits("mailbox")
	running, waiting, refused := e.raw(t, "spin"), e.raw(t, "spin"), e.raw(t, "spin")
	running.Send(envelope.Frame{Kind: envelope.Request, RouteID: rSpin, RequestID: 1, Body: []byte(`{"ms":1000}`)})
	e.Logs.WaitFor(t, "spinning", "ms", "1000")
	waiting.Send(envelope.Frame{Kind: envelope.Request, RouteID: rSpin, RequestID: 2, Body: []byte(`{"ms":0}`)})
	wiretest.Eventually(t, "the second request in the lane", func() bool { return depth() == 1 })
	refused.Send(
		envelope.Frame{Kind: envelope.Request, RouteID: rSpin, RequestID: 3, Body: []byte(`{"ms":0}`)},
	)
	refused.Expect(envelope.Frame{Kind: envelope.Error, RequestID: 3, Code: string(codes.Busy)})
	// "At once" is an order, not a clock: the busy answer comes while the
	// first request, which spins for a second, is still unanswered; one
	// that waited for room in the mailbox could only come after it.
	if done := e.RequestsTotal("spin", "spin", "ok"); done != 0 {
		t.Fatalf("busy came after %v spin answers: it waited for the mailbox", done)
	}
	notifier := e.raw(t, "spin")
	notifier.Send(envelope.Frame{Kind: envelope.Notify, RouteID: rSpin, Body: []byte(`{"ms":0}`)})
	wiretest.Eventually(t, "busy counted", func() bool {
		return e.Dropped("busy")-busyBefore == 2 && e.LimitHits("mailbox")-hitBefore == 2
	})
	running.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	waiting.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
	refused.ExpectNothing(100 * time.Millisecond)
	notifier.ExpectNothing(10 * time.Millisecond)
}

// note is a push of the note route as the test clients see it.
type note struct {
	Text string `json:"text"`
}

// TestSlowConsumer: a client that never reads while a service pushes to it
// a lot fills its queue (the pushes get queue_full), and is closed as a
// slow consumer after write_timeout, counted and heard by its target;
// meanwhile a room broadcast to fifty other members reaches every one.
func TestSlowConsumer(t *testing.T) {
	e := startEdge(t, "  outbound_queue: 4\n  write_timeout: 300ms")

	const members = 50
	got := make(chan string, 4*members)
	for i := 0; i < members; i++ {
		c := e.client(t, "idlen")
		name := "m" + string(rune('A'+i/26)) + string(rune('a'+i%26))
		c.OnPush(rNote, func(body []byte) {
			var n note
			if json.Unmarshal(body, &n) == nil {
				got <- name + ":" + n.Text
			}
		})
		loginAs(t, c, name)
		call(t, c, rJoin, nil, nil)
	}
	caller := e.client(t, "idlen")
	loginAs(t, caller, "caller") // not in the room

	// The slow one logs in and joins, then stops reading.
	slow := e.raw(t, "idlen")
	if err := slow.NC.(interface{ SetReadBuffer(int) error }).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	slow.Send(envelope.Frame{Kind: envelope.Request, RouteID: rLogin, RequestID: 1, Body: []byte(`{"user":"slow"}`)})
	var slowRef ref
	if err := json.Unmarshal(slow.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1}).Body, &slowRef); err != nil {
		t.Fatal(err)
	}
	slow.Send(envelope.Frame{Kind: envelope.Request, RouteID: rJoin, RequestID: 2})
	slow.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})

	fullBefore := e.EgressRejected("queue_full")
	type result struct {
		Sent  int            `json:"sent"`
		Codes map[string]int `json:"codes"`
		Last  string         `json:"last"`
	}
	flooded := make(chan result, 1)
	go func() {
		var r result
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := caller.Call(ctx, rPush, map[string]any{"ref": slowRef, "size": 32 << 10, "count": 5000, "pause": 1,
			"stop": string(codes.SessionNotFound)}, &r)
		if err != nil {
			r.Last = err.Error()
		}
		flooded <- r
	}()

	// Once the slow one's queue is full, broadcast to the room.
	wiretest.Eventually(t, "the slow consumer's queue full", func() bool { return e.EgressRejected("queue_full") > fullBefore })
	var b struct {
		Accepted int               `json:"accepted"`
		Rejected map[string]string `json:"rejected"`
	}
	call(t, caller, rBroadcast, map[string]string{"text": "hello"}, &b)
	if b.Accepted < members {
		t.Fatalf("broadcast accepted by %d, rejected %v", b.Accepted, b.Rejected)
	}
	for player := range b.Rejected {
		if player != "slow" {
			t.Fatalf("broadcast rejected %q: %v", player, b.Rejected)
		}
	}
	seen := map[string]bool{}
	deadline := time.After(patience)
	for len(seen) < members {
		select {
		case s := <-got:
			seen[s] = true
		case <-deadline:
			t.Fatalf("the broadcast reached %d of %d members", len(seen), members)
		}
	}

	var r result
	select {
	case r = <-flooded:
	case <-time.After(10 * time.Second):
		t.Fatal("the flood never ended")
	}
	if r.Last != string(codes.SessionNotFound) || r.Codes[string(codes.QueueFull)] == 0 {
		t.Fatalf("flood: %+v, want queue_full refusals, then session_not_found once closed", r)
	}
	wiretest.Eventually(t, "slow_consumer counted", func() bool {
		return e.ClosedTotal("slow_consumer") == 1 && e.LimitHits("slow_consumer") == 1
	})
	e.Logs.WaitFor(t, "client_disconnected", "player_id", "slow", "reason", "slow_consumer")
	if n := e.Logs.Count("client_disconnected"); n != 1 {
		t.Fatalf("%d sessions left; only the slow one should have", n)
	}
}

// TestPipelinedAnswersSmallQueue: a client that reads gets every answer of
// a pipelined burst even when the burst is far larger than its
// outbound_queue: answers have a reserve of max_inflight, and only
// write_timeout judges a client slow.
func TestPipelinedAnswersSmallQueue(t *testing.T) {
	e := startEdge(t, "  outbound_queue: 4\n  max_inflight: 128\n  rate_limit: {per_second: 0}")
	w := e.raw(t, "idlen")
	var frames []envelope.Frame
	for id := uint64(1); id <= 100; id++ {
		frames = append(frames, envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: id, Body: []byte(`1`)})
	}
	for round := 0; round < 5; round++ {
		w.Send(frames...)
		for i := 0; i < len(frames); i++ {
			if f, err := w.Next(); err != nil || f.Kind != envelope.Response {
				t.Fatalf("round %d, after %d answers: %v (slow_consumer closes: %v)", round, i, err, e.ClosedTotal("slow_consumer"))
			}
		}
	}
	if e.ClosedTotal("slow_consumer") != 0 {
		t.Fatal("a reading client was closed as a slow consumer")
	}
}

// TestAnswerBehindFullQueue: pushes fill a session's outbound_queue while
// its client is not reading (they get queue_full); the answer to its
// request still finds room, and once the client reads again it gets the
// pushes and the answer, its session intact.
func TestAnswerBehindFullQueue(t *testing.T) {
	e := startEdge(t, "  outbound_queue: 4\n  write_timeout: 5s")
	pusher := e.client(t, "idlen")
	loginAs(t, pusher, "pusher")
	w := e.raw(t, "idlen")
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rLogin, RequestID: 1, Body: []byte(`{"user":"reader"}`)})
	var v ref
	if err := json.Unmarshal(w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1}).Body, &v); err != nil {
		t.Fatal(err)
	}
	// Push until the socket's buffers are full and the write loop is
	// stuck: then a whole batch of pushes finds the queue full.
	wiretest.Eventually(t, "the queue full and staying so", func() bool {
		res := pushTo(t, pusher, v, map[string]any{"size": 32 << 10, "count": 50, "pause": 1, "stop": "never"})
		return res.Sent == 0 && res.Codes[string(codes.QueueFull)] == 50
	})
	// The request goes in (we can still write); its answer comes back
	// to a full queue.
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rSleep, RequestID: 2, Body: []byte(`{"ms":10}`)})
	sleeps := func() float64 { return e.RequestsTotal("edge", "sleep", "ok") }
	wiretest.Eventually(t, "the sleep answered", func() bool { return sleeps() == 1 })

	// Now read: every push, then the answer, and the session lives.
	for {
		f, err := w.Next()
		if err != nil {
			t.Fatalf("the session ended before its answer: %v (slow_consumer closes: %v)", err, e.ClosedTotal("slow_consumer"))
		}
		if f.Kind == envelope.Response && f.RequestID == 2 {
			break
		}
		if f.Kind != envelope.Push {
			t.Fatalf("unexpected frame %v", f.Kind)
		}
	}
	w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: 3, Body: []byte(`3`)})
	w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 3})
}
