package service

import (
	"testing"

	"github.com/shieldrpc/shield/ingress"
)

// TestBusinessLaneTakes: the actor takes what waits in one go, yet the
// bound and the depth count every message not yet popped, and messages
// come out in the order they were pushed, across takes.
func TestBusinessLaneTakes(t *testing.T) {
	q := newBusinessLane(4)
	msg := func(id uint64) *ingress.ClientIngress {
		return &ingress.ClientIngress{Client: ingress.ClientContext{RequestID: id}}
	}
	popID := func() uint64 {
		t.Helper()
		m, ok := q.pop()
		if !ok {
			t.Fatal("the lane is empty")
		}
		return m.(*ingress.ClientIngress).Client.RequestID
	}
	if n := q.pushAll([]*ingress.ClientIngress{msg(1), msg(2), msg(3)}); n != 3 {
		t.Fatalf("pushed %d of 3", n)
	}
	if got := popID(); got != 1 { // takes all three, hands out the first
		t.Fatalf("popped %d, want 1", got)
	}
	if d := q.len(); d != 2 {
		t.Fatalf("depth %d with two taken and not popped, want 2", d)
	}
	if !q.push(msg(4)) || !q.push(msg(5)) {
		t.Fatal("the lane refused while it had room")
	}
	if q.push(msg(6)) {
		t.Fatal("the lane took a fifth message past its bound of 4 (two of them taken)")
	}
	for want := uint64(2); want <= 5; want++ {
		if got := popID(); got != want {
			t.Fatalf("popped %d, want %d", got, want)
		}
	}
	if _, ok := q.pop(); ok || q.len() != 0 {
		t.Fatal("the lane is not empty after every message was popped")
	}
	// A burst's grown array is not kept.
	q.setLimit(5000)
	burst := make([]*ingress.ClientIngress, 2000)
	for i := range burst {
		burst[i] = msg(uint64(i + 1))
	}
	q.pushAll(burst)
	for range burst {
		popID()
	}
	q.push(msg(1))
	popID()
	if cap(q.items) > 1024 || cap(q.taken) > 1024 {
		t.Fatalf("kept arrays of %d and %d after a burst", cap(q.items), cap(q.taken))
	}
}
