package acceptance

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestRateLimit: with rate_limit 5/s and a burst of 5, a burst of twenty
// requests gets five answers and error frames client_rpc.rate_limited
// (keeping the request's route_id on typelen) for the rest, each request
// exactly one frame; notifies over the limit are dropped, never run, and
// counted.
func TestRateLimit(t *testing.T) {
	e := startEdge(t, "  rate_limit: {per_second: 5, burst: 5}")
	w := e.raw(t, "typelen")
	droppedBefore, hitBefore := e.Dropped("rate_limited"), e.LimitHits("rate_limit")

	var burst []envelope.Frame
	for id := uint64(1); id <= 20; id++ {
		burst = append(burst, envelope.Frame{Kind: envelope.Request, RouteID: rEcho, RequestID: id, Body: []byte(fmt.Sprint(id))})
	}
	w.Send(burst...)
	answered, limited := map[uint64]bool{}, 0
	for len(answered) < 20 {
		f, err := w.Next()
		if err != nil {
			t.Fatalf("after %d answers: %v; seen %v", len(answered), err, w.Seen)
		}
		if answered[f.RequestID] {
			t.Fatalf("request %d answered twice", f.RequestID)
		}
		answered[f.RequestID] = true
		switch {
		case f.Kind == envelope.Response && string(f.Body) == fmt.Sprint(f.RequestID):
		case f.Kind == envelope.Error && f.Code == string(codes.RateLimited) && f.RouteID == rEcho:
			if f.RequestID <= 5 {
				t.Fatalf("request %d, within the burst, was limited", f.RequestID)
			}
			limited++
		default:
			t.Fatalf("unexpected frame; seen %v", w.Seen)
		}
	}
	// The burst is written at once: at most a token or two refill meanwhile.
	if limited < 13 {
		t.Fatalf("only %d of 20 requests limited", limited)
	}
	wiretest.Eventually(t, "limited requests counted", func() bool {
		return e.Dropped("rate_limited") == droppedBefore+float64(limited) && e.LimitHits("rate_limit") >= hitBefore+float64(limited)
	})

	// Notifies over the limit: no answer, no handler, counted.
	droppedBefore = e.Dropped("rate_limited")
	var notifies []envelope.Frame
	for i := 0; i < 10; i++ {
		notifies = append(notifies, envelope.Frame{Kind: envelope.Notify, RouteID: rMark, Body: []byte(fmt.Sprintf(`{"v":"flood-%d"}`, i))})
	}
	w.Send(notifies...)
	w.ExpectNothing(200 * time.Millisecond)
	// After a second the bucket has tokens again: ask what ran.
	var marks []any
	wiretest.Eventually(t, "the bucket refilled", func() bool {
		time.Sleep(100 * time.Millisecond)
		w.Send(envelope.Frame{Kind: envelope.Request, RouteID: rMarks, RequestID: 100})
		f, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Kind == envelope.Error {
			return false
		}
		marks = markValues(t, f.Body)
		return true
	})
	ran := 0
	for i := 0; i < 10; i++ {
		if hasMark(marks, fmt.Sprintf("flood-%d", i)) {
			ran++
		}
	}
	if ran > 2 {
		t.Fatalf("%d of 10 notifies over the limit ran", ran)
	}
	if got := e.Dropped("rate_limited") - droppedBefore; got < float64(10-ran) {
		t.Fatalf("%v notifies counted as rate_limited, want at least %d", got, 10-ran)
	}
}

func markValues(t testing.TB, body []byte) []any {
	t.Helper()
	var got struct{ Marks []any }
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("marks %s: %v", body, err)
	}
	return got.Marks
}

// TestRateLimitFlood: a session over its rate limit in each of ten seconds
// in a row gets a session.rate_limited notice and is closed; its target
// hears rate_limited. It takes about ten seconds, so -short skips it (the
// streak itself is unit-tested on ingress.Bucket with synthetic times).
func TestRateLimitFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("takes ten seconds of flooding")
	}
	e := startEdge(t, "  rate_limit: {per_second: 5, burst: 5}")
	c := e.client(t, "idlen")
	r := loginAs(t, c, "flooder")
	notices := make(chan string, 1)
	c.OnNotice(func(code, _ string) { notices <- code })
	other := e.client(t, "idlen")

	started := time.Now()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond) // 50 frames/s against 5/s
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-c.Done():
				return
			case <-tick.C:
			}
			if c.Notify(rMark, map[string]string{"v": "flood"}) != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()

	select {
	case code := <-notices:
		if code != string(codes.SessionRateLimited) {
			t.Fatalf("notice %q", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no session.rate_limited notice after 15 s of flooding")
	}
	if el := time.Since(started); el < 10*time.Second {
		t.Fatalf("closed after %v of flooding, before ten seconds in a row", el)
	}
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatal("not closed after the notice")
	}
	e.Logs.WaitFor(t, "client_disconnected", "session_id", fmt.Sprint(r.SessionID), "player_id", "flooder", "reason", "rate_limited")
	wiretest.Eventually(t, "rate_limited close counted", func() bool { return e.ClosedTotal("rate_limited") == 1 })
	// Nobody else was affected.
	call(t, other, rEcho, 1, nil)
}
