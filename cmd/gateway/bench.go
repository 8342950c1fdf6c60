package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shieldrpc/shield/bench"
	"github.com/shieldrpc/shield/bootstrap"
)

// benchCmd measures the gateway against the baseline echo server in one
// run, on this machine: each in-flight depth, raw and JSON bodies, and
// with -ws and -tls the raw echo over those transports too (both: also
// ws under TLS). With -addr it loads a running gateway instead, over the
// transport the dial flags say.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "load an already running gateway at `HOST:PORT` instead of starting one")
	route := fs.Uint("route", bench.RouteRaw, "route id for -addr")
	body := fs.String("body", string(bench.JSONBody), "request body for -addr")
	conns := fs.Int("conns", 50, "connections")
	inflight := fs.String("inflight", "1,16", "requests in flight per connection, comma-separated")
	dur := fs.Duration("d", 10*time.Second, "measured time per run")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured time before each run")
	idle := fs.Int("idle", 0, "instead: open `N` idle sessions and report the memory per session")
	adminAddr := fs.String("admin", "", "with -addr and -idle: the gateway's admin `HOST:PORT`, to read its memory")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the gateway runs to `FILE`")
	dial := addDialFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var depths []int
	for _, s := range strings.Split(*inflight, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "bench: bad -inflight %q\n", s)
			return 2
		}
		depths = append(depths, n)
	}
	ctx := context.Background()
	// run loads target with o's transport, route and body.
	run := func(name string, o bench.Options, depth int) (bench.Result, bool) {
		o.Conns, o.InFlight, o.Duration, o.Warmup = *conns, depth, *dur, *warmup
		r, err := bench.Run(ctx, o)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return r, false
		}
		fmt.Fprintf(stdout, "%-22s in-flight %-3d %s\n", name, depth, r)
		return r, true
	}
	if *addr != "" && *idle > 0 {
		return remoteIdleMemory(stdout, stderr, *addr, *adminAddr, *idle)
	}
	if *addr != "" {
		o := bench.Options{Addr: *addr, Route: uint32(*route), Body: []byte(*body), Path: *dial.path}
		if *dial.ws {
			o.Transport = "ws"
		}
		var err error
		if o.TLS, err = dial.tlsConfig(); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 2
		}
		for _, d := range depths {
			if _, ok := run("gateway", o, d); !ok {
				return 1
			}
		}
		return 0
	}
	if *dial.ca != "" || *dial.cert != "" || *dial.insecure || *dial.origin != "" {
		fmt.Fprintln(stderr, "bench: -ca, -cert, -insecure and -origin apply to -addr only")
		return 2
	}

	dir, err := os.MkdirTemp("", "shield-bench-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfgPath, err := bench.WriteEchoConfig(dir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	srv, err := bootstrap.Start(ctx, cfgPath, bootstrap.Options{Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer srv.Stop(ctx)
	gw := srv.Gateway.Addr("bench").String()
	clientTLS, err := bench.ClientTLS(dir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The extra transports measured next to plain tcp: the raw echo, as
	// the gateway's own cost shows best there.
	type extra struct {
		name string
		o    bench.Options
	}
	var extras []extra
	raw := func(listener, transport string, tc *tls.Config) bench.Options {
		return bench.Options{Addr: srv.Gateway.Addr(listener).String(), Transport: transport, TLS: tc, Route: bench.RouteRaw, Body: bench.JSONBody}
	}
	if *dial.ws {
		extras = append(extras, extra{"gateway ws raw", raw("bench_ws", "ws", nil)})
	}
	if *dial.tls {
		extras = append(extras, extra{"gateway tls raw", raw("bench_tls", "tcp", clientTLS)})
	}
	if *dial.ws && *dial.tls {
		extras = append(extras, extra{"gateway wss raw", raw("bench_wss", "ws", clientTLS)})
	}
	if *idle > 0 {
		return idleMemory(stdout, stderr, gw, *idle, srv)
	}

	base, err := bench.NewEchoServer("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer base.Close()
	fmt.Fprintf(stdout, "%d connections, %v per run after %v warm-up, GOMAXPROCS %d\n", *conns, *dur, *warmup, runtime.GOMAXPROCS(0))
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer f.Close()
	}
	for _, d := range depths {
		b, ok := run("baseline echo", bench.Options{Addr: base.Addr(), Route: bench.RouteRaw, Body: bench.JSONBody}, d)
		if !ok {
			return 1
		}
		var prof *os.File
		if *cpuprofile != "" && d == depths[len(depths)-1] {
			prof, _ = os.Create(*cpuprofile)
			pprof.StartCPUProfile(prof)
		}
		rawRes, ok := run("gateway forward_raw", bench.Options{Addr: gw, Route: bench.RouteRaw, Body: bench.JSONBody}, d)
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
		}
		if !ok {
			return 1
		}
		js, ok := run("gateway json", bench.Options{Addr: gw, Route: bench.RouteJSON, Body: bench.JSONBody}, d)
		if !ok {
			return 1
		}
		fmt.Fprintf(stdout, "%-22s in-flight %-3d raw %.2fx, json %.2fx of the baseline\n", "ratio", d, rawRes.RPS()/b.RPS(), js.RPS()/b.RPS())
		for _, x := range extras {
			r, ok := run(x.name, x.o, d)
			if !ok {
				return 1
			}
			fmt.Fprintf(stdout, "%-22s in-flight %-3d %.2fx of tcp forward_raw\n", "ratio", d, r.RPS()/rawRes.RPS())
		}
	}
	return 0
}

// idleMemory opens n idle sessions and reports the gateway's heap and
// stack growth per session (the client ends of the sockets, in the same
// process, are included: a little over the gateway's own cost).
func idleMemory(stdout, stderr io.Writer, addr string, n int, srv *bootstrap.Server) int {
	// Both ends of every connection are in this process: two descriptors
	// each. Raising the hard limit works as root; otherwise the soft one
	// goes as far as the hard one allows.
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(2*n+1024) {
		want := uint64(2*n + 1024)
		if lim.Max < want {
			lim.Max = want
		}
		lim.Cur = want
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			fmt.Fprintf(stderr, "bench: cannot raise the open-file limit to %d: %v\n", want, err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns, err := dialIdle(addr, n)
	defer closeAll(conns)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	deadline := time.Now().Add(30 * time.Second)
	for srv.Gateway.Sessions().Len() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapInuse) - int64(before.HeapInuse)
	stack := int64(after.StackInuse) - int64(before.StackInuse)
	fmt.Fprintf(stdout, "%d idle sessions: heap %d KiB + stacks %d KiB = %.1f KiB per session (goroutines %d)\n",
		srv.Gateway.Sessions().Len(), heap>>10, stack>>10, float64(heap+stack)/1024/float64(n), runtime.NumGoroutine())
	return 0
}

// remoteIdleMemory opens n idle sessions to a gateway running in another
// process and reports its heap and stack growth per session, read from
// its /metrics: the way to measure 10,000 sessions where one process may
// not hold both ends of each.
func remoteIdleMemory(stdout, stderr io.Writer, addr, admin string, n int) int {
	if admin == "" {
		fmt.Fprintln(stderr, "bench: -idle with -addr needs -admin HOST:PORT")
		return 2
	}
	read := func() (heap, stack, sessions float64, err error) {
		m, err := scrapeMetrics(admin, "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "shield_sessions")
		return m[0], m[1], m[2], err
	}
	heap0, stack0, _, err := read()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	conns, err := dialIdle(addr, n)
	defer closeAll(conns)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	var heap, stack, sessions float64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if heap, stack, sessions, err = read(); err == nil && int(sessions) >= n {
			break
		}
	}
	fmt.Fprintf(stdout, "%.0f idle sessions: heap %+.0f KiB + stacks %+.0f KiB = %.1f KiB per session\n",
		sessions, (heap-heap0)/1024, (stack-stack0)/1024, (heap-heap0+stack-stack0)/1024/float64(n))
	return 0
}

// scrapeMetrics reads unlabelled samples from a Prometheus text endpoint.
func scrapeMetrics(admin string, names ...string) ([]float64, error) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make([]float64, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for i, name := range names {
			if rest, ok := strings.CutPrefix(line, name+" "); ok {
				out[i], _ = strconv.ParseFloat(strings.TrimSpace(rest), 64)
			}
		}
	}
	return out, sc.Err()
}

// dialIdle opens n connections that send nothing; on error it returns the
// ones it opened, for the caller to close.
func dialIdle(addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return conns, fmt.Errorf("dial %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}
