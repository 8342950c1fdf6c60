package session

import (
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
)

var drainBye = &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDraining), Message: "bye"}

// TestDrainLifecycle: a drain queues its heads-up, counts its hint down,
// refuses a second drain and the suspension of the session, and closes it
// with reason draining when the grace ends; a close before then stops
// the grace's timer.
func TestDrainLifecycle(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	heads := &envelope.Frame{Kind: envelope.Notice, Code: string(codes.GatewayDrainStarted), GraceMS: 50}
	now := time.Now()
	if s.Draining() || s.RetryAfter(now) != 0 {
		t.Fatal("a new session is draining")
	}
	if !s.Drain(50*time.Millisecond, now.Add(time.Second), heads, drainBye) {
		t.Fatal("Drain reported false")
	}
	if !s.Draining() || s.Drain(time.Hour, now, nil, nil) {
		t.Fatal("a second drain began")
	}
	if got := s.RetryAfter(now.Add(400 * time.Millisecond)); got != 600*time.Millisecond {
		t.Fatalf("RetryAfter = %v, want 600ms", got)
	}
	if got := s.RetryAfter(now.Add(2 * time.Second)); got != time.Millisecond {
		t.Fatalf("RetryAfter past the hint = %v, want the 1ms floor", got)
	}
	if items := s.Take(nil); len(items) != 1 || items[0].Frame != heads {
		t.Fatalf("queued %+v, want the heads-up", items)
	}
	if s.Suspend(s.Attachment(), Closed, time.Minute) {
		t.Fatal("a draining session was suspended")
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the grace ended and the session did not close")
	}
	if _, r := s.Closed(); r != Draining || s.Notice() != drainBye {
		t.Fatalf("closed with %q and %+v, want draining and the notice", r, s.Notice())
	}

	early := f.add(2)
	early.Drain(time.Hour, now, nil, drainBye)
	early.Close(Closed, nil)
	if early.drain.timer.Stop() {
		t.Fatal("the grace's timer outlived the session")
	}
}

// TestDrainSuspendedOrNow: a suspended session, and any with a grace of
// 0, closes at once with reason draining (SPEC §4: a drain ends a
// suspended session at once); a closed one is not drained.
func TestDrainSuspendedOrNow(t *testing.T) {
	f := newFixture()
	s := f.add(1)
	if !s.Suspend(s.Attachment(), Closed, time.Minute) {
		t.Fatal("Suspend reported false")
	}
	if !s.Drain(time.Hour, time.Now(), nil, drainBye) {
		t.Fatal("Drain of a suspended session reported false")
	}
	if closed, r := s.Closed(); !closed || r != Draining {
		t.Fatalf("suspended and drained: closed %v reason %q", closed, r)
	}
	now := f.add(2)
	if !now.Drain(0, time.Now(), nil, drainBye) {
		t.Fatal("Drain with grace 0 reported false")
	}
	if closed, r := now.Closed(); !closed || r != Draining || now.Notice() != drainBye {
		t.Fatalf("grace 0: closed %v reason %q notice %+v", closed, r, now.Notice())
	}
	if now.Drain(time.Hour, time.Now(), nil, drainBye) {
		t.Fatal("a closed session was drained")
	}
}
