package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// runEcho runs a short load of o against a baseline echo server of its
// own, 4 connections of 4 requests in flight.
func runEcho(t *testing.T, o Options) Result {
	t.Helper()
	s, err := NewEchoServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o.Addr, o.Conns, o.InFlight, o.Duration, o.Warmup = s.Addr(), 4, 4, 200*time.Millisecond, 50*time.Millisecond
	o.Route, o.Body = 7, []byte("hello")
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEchoBaselineRun(t *testing.T) {
	r := runEcho(t, Options{LoadCPU: true})
	if r.Requests == 0 || r.Errors != 0 || r.Latency.Count() != r.Requests {
		t.Fatalf("result %+v", r)
	}
	// The echo server runs in this process, so the load's CPU is both.
	if r.Load <= 0 || !strings.Contains(r.String(), "  load ") || strings.Contains(r.String(), "  cpu ") {
		t.Fatalf("LoadCPU: load %v, line %q", r.Load, r.String())
	}
}

func TestHistogramQuantiles(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q        float64
		lo, high time.Duration
	}{{0.5, 440 * time.Microsecond, 500 * time.Microsecond}, {0.99, 890 * time.Microsecond, 990 * time.Microsecond}} {
		if got := h.Quantile(tc.q); got < tc.lo || got > tc.high {
			t.Errorf("q%v = %v, want in [%v, %v]", tc.q, got, tc.lo, tc.high)
		}
	}
	if h.Max() != time.Millisecond {
		t.Errorf("max %v", h.Max())
	}
}

func TestFanoutBaselineRun(t *testing.T) {
	s, err := NewFanServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := Fanout(context.Background(), FanOptions{Addr: s.Addr(), Members: 8, InFlight: 2, Duration: 200 * time.Millisecond,
		Warmup: 50 * time.Millisecond, Body: JSONBody})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pushes == 0 || r.Blasts == 0 || r.Round.Count() == 0 {
		t.Fatalf("result %+v", r)
	}
}
