package gateway

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/session"
)

// These tests drive a Gateway without a Lua runtime behind it: fakeServices
// stands in for service.Runtime, so that a test controls what a service
// does and sees exactly what the gateway hands it.

const fakeYAML = `node: {name: gw-fake}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: a}
session: {max_inflight: 1000000, outbound_queue: 100000, max_sessions: 4}
actors:
  - name: a
    script: a.lua
    rpc:
      routes:
        - {id: 1, name: echo, binding: echo, requires_auth: false}
        - {id: 2, binding: anon, requires_auth: false}
        - {id: 3, name: note, binding: note, direction: s2c}
  - name: b
    script: b.lua
`

// fakeServices is a Services whose every service has one instance.
type fakeServices struct {
	deliver func(target egress.ActorID, in *ingress.ClientIngress) *codes.Error
}

func (f *fakeServices) Deliver(target egress.ActorID, in *ingress.ClientIngress) *codes.Error {
	if f.deliver != nil {
		return f.deliver(target, in)
	}
	return nil
}
func (f *fakeServices) Control(egress.ActorID, any) {}
func (f *fakeServices) Crowded(egress.ActorID) bool { return false }
func (f *fakeServices) Entry(service string, _ uint64) (egress.ActorID, *codes.Error) {
	return egress.ActorID{Service: service}, nil
}

func newFakeGateway(t testing.TB, svc *fakeServices) *Gateway {
	t.Helper()
	cfg, errs := config.Parse("/fake/shield.yaml", []byte(fakeYAML))
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	table, errs := descriptor.Merge(cfg)
	if err := errs.Err(); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Config: cfg, Table: table, Services: svc, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// addPeer registers a session as serve does, without a connection.
func (g *Gateway) addPeer(t testing.TB) *peer {
	t.Helper()
	p, err := g.newPeer(g.listeners[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFrameOneBindingSnapshot: the ref a service receives and the target
// it is delivered to come from the same binding, even while the session
// is rebound between two services as fast as possible. Epochs alternate
// between the services (odd: a, even: b), so a frame carrying an epoch of
// one binding to the target of another is caught.
func TestFrameOneBindingSnapshot(t *testing.T) {
	var mismatches atomic.Int64
	svc := &fakeServices{deliver: func(target egress.ActorID, in *ingress.ClientIngress) *codes.Error {
		if (in.Client.Ref.Epoch%2 == 1) != (target.Service == "a") {
			mismatches.Add(1)
		}
		return nil
	}}
	g := newFakeGateway(t, svc)
	p := g.addPeer(t)
	s := p.s

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		next := map[string]string{"a": "b", "b": "a"}
		for {
			select {
			case <-stop:
				return
			default:
			}
			b := s.Binding()
			var err *codes.Error
			g.Bind(&egress.BindRequest{Ref: b.Ref(s.ID), PlayerID: "p", Target: egress.ActorID{Service: next[b.Target.Service]}, Caller: b.Target},
				func(_ egress.ClientRef, e *codes.Error) { err = e })
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline) && mismatches.Load() == 0; i++ {
		f := envelope.Frame{Kind: envelope.Notify, RouteID: 1}
		p.frame(&f, time.Now(), nil, nil)
		s.Release() // the fake service never answers
	}
	close(stop)
	wg.Wait()
	if n := mismatches.Load(); n != 0 {
		t.Fatalf("%d frames delivered to one binding's target with another binding's ref", n)
	}
}

// TestRespondLabelsRouteByName: an answer that does not name its route (as
// a dead VM's unavailable does not) is counted under the route's name from
// the descriptor, as SPEC §9 asks; a route without a name is counted by id.
func TestRespondLabelsRouteByName(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	id := g.addPeer(t).s.ID
	g.Respond(&egress.Response{SessionID: id, RouteID: 1, RequestID: 7, Service: "a",
		Err: codes.New(codes.Unavailable, "down"), Received: time.Now()})
	g.Respond(&egress.Response{SessionID: id, RouteID: 2, RequestID: 8, Service: "a", Received: time.Now()})
	if got := testutil.ToFloat64(g.m.Requests.WithLabelValues("a", "echo", string(codes.Unavailable))); got != 1 {
		t.Errorf(`shield_requests_total{route="echo",code="client_rpc.unavailable"} = %v, want 1`, got)
	}
	if got := testutil.ToFloat64(g.m.Requests.WithLabelValues("a", "2", "ok")); got != 1 {
		t.Errorf(`shield_requests_total{route="2",code="ok"} = %v, want 1`, got)
	}
}

// TestPushToClosingSession: a push racing the close of its only target is
// refused as session_not_found (the session is gone), never as queue_full:
// the queue is nearly empty.
func TestPushToClosingSession(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		s := g.addPeer(t).s
		id := s.ID
		ref := egress.ClientRef{SessionID: id, Epoch: 1, Gateway: g.name}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Close(session.Closed, nil)
		}()
		for {
			got := g.Push(&egress.Push{RouteID: 3, Bodies: map[string][]byte{"json": []byte(`{}`)}, Targets: []egress.ClientRef{ref}})
			if got[0] == codes.QueueFull {
				t.Fatalf("session %d: a push to a closing session refused as queue_full", id)
			}
			if got[0] != "" {
				break
			}
			s.Take(nil)
		}
		<-done
	}
}

// TestTakeSlotNeverOverAdmits: every listener admits concurrently; however
// many admit at once, no more than max_sessions connections are counted.
func TestTakeSlotNeverOverAdmits(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	for round := 0; round < 200; round++ {
		g.live.Store(0)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for g.takeSlot() {
					admitted.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := admitted.Load(); n != int64(g.cfg.Session.MaxSessions) {
			t.Fatalf("round %d: %d connections admitted with max_sessions %d", round, n, g.cfg.Session.MaxSessions)
		}
	}
}

// failingListener fails every Accept with a temporary error until closed.
type failingListener struct {
	closed chan struct{}
	once   sync.Once
	n      atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, net.ErrClosed
	default:
	}
	l.n.Add(1)
	return nil, errors.New("accept: too many open files")
}
func (l *failingListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *failingListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestStopAcceptingInterruptsBackoff: an accept loop backing off after
// errors stops as soon as the gateway stops accepting, not after its
// back-off (up to a second) has run out.
func TestStopAcceptingInterruptsBackoff(t *testing.T) {
	g := newFakeGateway(t, &fakeServices{})
	ln := &failingListener{closed: make(chan struct{})}
	g.listeners[0].ln = ln
	g.Serve()
	// 5+10+...+640 ms: the ninth error sleeps a whole second.
	const ninth = time.Second
	deadline := time.Now().Add(5 * time.Second)
	var before time.Time // the last poll that saw fewer than 9 errors
	for {
		now := time.Now()
		if ln.n.Load() >= 9 {
			break
		}
		before = now
		if now.After(deadline) {
			t.Fatalf("only %d accept errors", ln.n.Load())
		}
		time.Sleep(5 * time.Millisecond) // polling, bounded by the deadline
	}
	// The ninth error came after before, so a loop that sits out its
	// back-off ends after before+ninth: the bound is the back-off itself,
	// not a guess at how fast a loaded machine joins a goroutine.
	// (Whether the loop is already in its back-off or about to enter it
	// makes no difference: either way it must give way.)
	g.StopAccepting()
	if end := time.Now(); !end.Before(before.Add(ninth)) {
		t.Fatalf("StopAccepting returned %v after the ninth error at the earliest: it waited out the back-off", end.Sub(before))
	}
	if n := ln.n.Load(); n != 9 {
		t.Fatalf("%d accept errors, want 9: the loop went on after StopAccepting", n)
	}
}
