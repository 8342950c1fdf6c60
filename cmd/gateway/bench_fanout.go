package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/shieldrpc/shield/bench"
)

// fanoutCmd measures a push to a room of -fanout members: the echo
// config's fan service in this process (one sender's blast is pushed by
// the service to every member, through SPEC §7's checks and each
// session's outbound queue) next to bench.FanServer, a plain Go loop
// writing the same frame to each member's socket. At each -inflight
// depth, about that many blasts are outstanding: beyond 1, a member's
// queue holds several pushes, which its connection writes at once.
func fanoutCmd(stdout, stderr io.Writer, f *benchFlags) int {
	n := *f.fanout
	raiseFileLimit(stderr, 2*n+1024)
	// The gateway: this process's, or with -addr a fan listener of a
	// running one; the baseline: this process's, or with -fan-base a
	// plain loop serving in a process of its own (-serve-fan).
	gw, baseAddr := *f.addr, *f.fanBase
	if gw == "" {
		srv, dir, err := startEcho(stderr)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		defer srv.Stop(context.Background())
		gw = srv.Gateway.Addr("fan").String()
	}
	if baseAddr == "" {
		base, err := bench.NewFanServer("127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer base.Close()
		baseAddr = base.Addr()
	}
	body := bench.JSONBody
	fmt.Fprintf(stdout, "fan-out to %d members, %v per run after %v warm-up, a %d-byte body\n", n, *f.dur, *f.warmup, len(body))
	run := func(name, addr string, depth int) (bench.FanResult, bool) {
		r, err := bench.Fanout(context.Background(), bench.FanOptions{Addr: addr, Members: n, InFlight: depth,
			Duration: *f.dur, Warmup: *f.warmup, Body: body})
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return r, false
		}
		fmt.Fprintf(stdout, "%-22s in-flight %-3d %s\n", name, depth, r)
		return r, true
	}
	for _, d := range f.depths {
		// Each run joins a room of its own: the fan service's room only
		// grows, so the gateway runs first on a fresh server.
		g, ok := run("gateway fan-out", gw, d)
		if !ok {
			return 1
		}
		b, ok := run("plain Go loop", baseAddr, d)
		if !ok {
			return 1
		}
		fmt.Fprintf(stdout, "%-22s in-flight %-3d gateway %.2fx of the plain loop\n", "ratio", d, g.PPS()/b.PPS())
	}
	return 0
}
