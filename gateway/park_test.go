//go:build linux

package gateway_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/gateway"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// TestParkedSessions: plain TCP sessions idle for a second park (no
// goroutine each, gateway/park.go), and a parked session is resumed by
// its next frame, by its idle_timeout (the notice, not before), and by a
// close from the write side (the stop at cleanup, whose goroutine check
// fails if a parked read loop is left).
func TestParkedSessions(t *testing.T) {
	const n, idle = 20, 3 * time.Second
	s := start(t, "  idle_timeout: 3s")
	before := runtime.NumGoroutine()
	ws := make([]*wire, n)
	for i := range ws {
		ws[i] = s.dial(t, "idlen")
		ws[i].Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 1, Body: []byte(`1`)})
		ws[i].Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	}
	if g := runtime.NumGoroutine(); g < before+n {
		t.Fatalf("%d goroutines with %d sessions reading, from %d", g, n, before)
	}
	wiretest.Eventually(t, "the idle sessions parked", func() bool { return runtime.NumGoroutine() < before+n/2 })

	// A frame resumes the read loop; the session's idle_timeout counts
	// from that frame.
	sent := time.Now()
	for _, w := range ws[:n/2] {
		w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 2, Body: []byte(`2`)})
		w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
	}
	// The rest are parked until their idle_timeout, which ends them
	// with the notice; the first half follow later.
	for _, w := range ws[n/2:] {
		w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout)})
		w.ExpectClosed()
	}
	for _, w := range ws[:n/2] {
		w.Expect(envelope.Frame{Kind: envelope.Notice, Code: string(codes.SessionIdleTimeout)})
		if el := time.Since(sent); el < idle {
			t.Fatalf("closed %v after its last frame, before idle_timeout", el)
		}
		w.ExpectClosed()
	}

	// Parked sessions closed by the gateway's stop (cleanup).
	for i := 0; i < 3; i++ {
		w := s.dial(t, "idlen")
		w.Send(envelope.Frame{Kind: envelope.Heartbeat})
		w.Expect(envelope.Frame{Kind: envelope.Heartbeat})
	}
	time.Sleep(1500 * time.Millisecond)
}

// TestParkedStacksFreed: once enough sessions have parked, the gateway
// gives their stacks back to the OS, once parking is quiet, and again
// after a second wave only when freeEvery has passed since the first.
func TestParkedStacksFreed(t *testing.T) {
	const n, every = 8, 2 * time.Second
	gateway.ShortenFreeing(t, n/2, 200*time.Millisecond, every)
	s := start(t, "")
	const freed = "gateway: parked read loops' stacks given back to the OS"
	ws := make([]*wire, n)
	for i := range ws {
		ws[i] = s.dial(t, "idlen")
		ws[i].Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 1, Body: []byte(`1`)})
		ws[i].Expect(envelope.Frame{Kind: envelope.Response, RequestID: 1})
	}
	s.Logs.WaitFor(t, freed)
	first := time.Now()
	// A second wave: every session resumes and parks again.
	for _, w := range ws {
		w.Send(envelope.Frame{Kind: envelope.Request, RouteID: routeEcho, RequestID: 2, Body: []byte(`2`)})
		w.Expect(envelope.Frame{Kind: envelope.Response, RequestID: 2})
	}
	wiretest.Eventually(t, "the second wave's freeing", func() bool { return s.Logs.Count(freed) == 2 })
	if el := time.Since(first); el < every-100*time.Millisecond {
		t.Fatalf("freed again %v after the first, before freeEvery (%v)", el, every)
	}
}
