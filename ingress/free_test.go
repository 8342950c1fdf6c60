package ingress

import (
	"sync"
	"testing"

	"github.com/shieldrpc/shield/egress"
)

// TestFreeListReuse: a released ClientIngress comes back zero to the next
// frame of a session of its shard, a round trip allocates nothing, and a
// shard keeps at most freeDepth values.
func TestFreeListReuse(t *testing.T) {
	const session = 7 * freeShards // a shard of its own in this test
	in := NewClientIngress(session)
	in.Client = ClientContext{Ref: egress.ClientRef{SessionID: session, Epoch: 2}, RequestID: 9}
	in.Body = []byte("body")
	in.Release()
	again := NewClientIngress(session)
	if again != in || again.Body != nil || again.Client != (ClientContext{}) {
		t.Fatalf("got %p %+v, want the released %p, zeroed", again, again, in)
	}
	again.Client.Ref.SessionID = session
	again.Release()
	if n := testing.AllocsPerRun(100, func() {
		x := NewClientIngress(session)
		x.Client.Ref.SessionID = session
		x.Release()
	}); n != 0 {
		t.Fatalf("a round trip allocates %v times", n)
	}
	var many []*ClientIngress
	for range 2 * freeDepth {
		x := NewClientIngress(session)
		x.Client.Ref.SessionID = session
		many = append(many, x)
	}
	for _, x := range many {
		x.Release()
	}
	sh := &free[session%freeShards]
	sh.mu.Lock()
	n := len(sh.items)
	sh.mu.Unlock()
	if n != freeDepth {
		t.Fatalf("the shard keeps %d values, want %d", n, freeDepth)
	}
}

// TestFreeListConcurrent takes and gives back from many goroutines, as
// read loops and actors do: under -race, no value is handed out twice.
func TestFreeListConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				s := uint64(g*1000 + i%5)
				x := NewClientIngress(s)
				if x.Client.RequestID != 0 {
					t.Error("a value in use was handed out")
					return
				}
				x.Client = ClientContext{Ref: egress.ClientRef{SessionID: s}, RequestID: 1}
				x.Release()
			}
		}()
	}
	wg.Wait()
}
