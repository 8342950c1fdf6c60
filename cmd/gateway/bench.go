package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shieldrpc/shield/bench"
	"github.com/shieldrpc/shield/bootstrap"
)

// benchFlags are gateway bench's flags.
type benchFlags struct {
	addr, body, adminAddr          *string
	route, login                   *uint
	conns, idle, fanout, pid, node *int
	inflight                       *string
	dur, warmup, tail              *time.Duration
	cpuprofile, memprofile         *string
	serveEcho, writeConfig, listen *string
	serveFan, fanBase, fanListen   *string
	dial                           *dialFlags
	depths                         []int
	rooms                          roomsFlags
}

// benchCmd measures the gateway against the baseline echo server in one
// run, on this machine: each in-flight depth, raw and JSON bodies, and
// with -ws and -tls the raw echo over those transports too (both: also
// ws under TLS). With -addr it loads a running gateway instead, over the
// transport the dial flags say; -idle and -fanout are the other two
// measures (bench_idle.go, bench_fanout.go); -serve-echo and
// -write-config serve the baseline and write the echo config for runs
// where each server is a process of its own (BENCHMARKS.md).
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := benchFlags{
		addr:        fs.String("addr", "", "load an already running gateway at `HOST:PORT` instead of starting one"),
		route:       fs.Uint("route", bench.RouteRaw, "route id for -addr"),
		body:        fs.String("body", string(bench.JSONBody), "request body for -addr"),
		login:       fs.Uint("login", bench.RouteLogin, "log each connection in on this `ROUTE` first, with the body bench-<run>-<conn> (0: no login: before login a session's frames reach its service one at a time, SPEC §5)"),
		conns:       fs.Int("conns", 50, "connections"),
		inflight:    fs.String("inflight", "1,16", "requests in flight per connection, comma-separated"),
		dur:         fs.Duration("d", 10*time.Second, "measured time per run"),
		warmup:      fs.Duration("warmup", 2*time.Second, "unmeasured time before each run"),
		tail:        fs.Duration("tail", 0, "also report how the answers slower than `D` spread over each run's measured time: evenly, or in bursts (the server, the load or the machine stopping for a while)"),
		idle:        fs.Int("idle", 0, "instead: open `N` idle sessions (logged in, see -login) to a gateway process and report its memory per session and its CPU while they idle"),
		fanout:      fs.Int("fanout", 0, "instead: one sender pushes to a room of `N` members, against a plain Go loop writing the same frame to each socket"),
		adminAddr:   fs.String("admin", "", "with -write-config: the admin server's `HOST:PORT` (metrics, /debug/pprof/); with -idle and -addr, the running gateway's (pprof on)"),
		pid:         fs.Int("pid", 0, "with -addr: the loaded gateway's process `ID`, to report its CPU time per request beside the load's own (and with -idle its memory)"),
		node:        fs.Int("node-pid", 0, "with -addr: the process `ID` of a cluster's service node behind the gateway, to report its CPU time per request too (bench/hop.sh)"),
		cpuprofile:  fs.String("cpuprofile", "", "in-process: write a CPU profile of each gateway run's measured time into `DIR`"),
		memprofile:  fs.String("memprofile", "", "in-process: write allocation profiles (before and after each gateway run's measured time, for pprof -base) into `DIR`; with -idle, the gateway process's heap profile holding the idle sessions"),
		serveEcho:   fs.String("serve-echo", "", "instead: serve the baseline echo at `HOST:PORT` until interrupted"),
		writeConfig: fs.String("write-config", "", "instead: write the echo service's config (and its certificates) into `DIR` and exit"),
		listen:      fs.String("listen", "", "with -write-config: the tcp listener's `HOST:PORT`"),
		fanListen:   fs.String("fan-listen", "", "with -write-config: the fan-out service's listener `HOST:PORT`"),
		serveFan:    fs.String("serve-fan", "", "instead: serve the fan-out baseline (a plain Go loop) at `HOST:PORT` until interrupted"),
		fanBase:     fs.String("fan-base", "", "with -fanout: the plain loop serving at `HOST:PORT` (-serve-fan) instead of one in this process; -addr is then the gateway's fan listener"),
	}
	f.rooms = roomsFlags{
		rooms:    fs.Int("rooms", 0, "instead: `N` rooms ticking with state sync against the same game on shield.timeout (docs/rooms.md §14), each server a process of its own"),
		members:  fs.Int("members", 8, "with -rooms: members per room, each sending -hz inputs a second"),
		hz:       fs.Int("hz", 20, "with -rooms: the tick rate"),
		fields:   fs.Int("fields", 20, "with -rooms: fields of the room's state"),
		changing: fs.Int("changing", 3, "with -rooms: fields changing per tick"),
		nodes:    fs.Int("nodes", 1, "with -rooms: service nodes; 2 or more: a gateway with the lobby and the embedded NATS, and that many service nodes sharing the rooms"),
	}
	f.dial = addDialFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, s := range strings.Split(*f.inflight, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "bench: bad -inflight %q\n", s)
			return 2
		}
		f.depths = append(f.depths, n)
	}
	switch {
	case *f.serveEcho != "":
		return serveBaseline(stdout, stderr, "baseline echo", func() (*bench.EchoServer, error) { return bench.NewEchoServer(*f.serveEcho) })
	case *f.serveFan != "":
		return serveBaseline(stdout, stderr, "fan-out baseline", func() (*bench.FanServer, error) { return bench.NewFanServer(*f.serveFan) })
	case *f.writeConfig != "":
		path, err := bench.EchoConfig{Listen: *f.listen, Fan: *f.fanListen, Admin: *f.adminAddr}.Write(*f.writeConfig)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(stdout, path)
		return 0
	case *f.idle > 0:
		return idleMemory(stdout, stderr, &f)
	case *f.fanout > 0:
		return fanoutCmd(stdout, stderr, &f)
	case *f.rooms.rooms > 0:
		return roomsCmd(stdout, stderr, &f, f.rooms)
	case *f.addr != "":
		return loadRemote(stdout, stderr, &f)
	}
	return loadInProcess(stdout, stderr, &f)
}

// run loads o at depth with the flags' connections and times, prints its
// row and reports whether it went through.
func (f *benchFlags) run(stdout, stderr io.Writer, name string, o bench.Options, depth int) (bench.Result, bool) {
	o.Conns, o.InFlight, o.Duration, o.Warmup, o.Tail = *f.conns, depth, *f.dur, *f.warmup, *f.tail
	r, err := bench.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return r, false
	}
	fmt.Fprintf(stdout, "%-22s in-flight %-3d %s\n", name, depth, r)
	if r.Bursts != nil {
		fmt.Fprintf(stdout, "%-22s %s\n", "", r.Bursts)
	}
	return r, true
}

// loadRemote loads a running gateway at -addr, with the CPU time of -pid,
// and reports the load's own CPU time beside it.
func loadRemote(stdout, stderr io.Writer, f *benchFlags) int {
	o := bench.Options{Addr: *f.addr, Route: uint32(*f.route), Body: []byte(*f.body), Login: uint32(*f.login), Path: *f.dial.path,
		LoadCPU: true}
	if *f.dial.ws {
		o.Transport = "ws"
	}
	var err error
	if o.TLS, err = f.dial.tlsConfig(); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if pid := *f.pid; pid != 0 {
		o.CPU = func() (time.Duration, error) { return bench.ProcessCPU(pid) }
	}
	if pid := *f.node; pid != 0 {
		o.NodeCPU = func() (time.Duration, error) { return bench.ProcessCPU(pid) }
	}
	for _, d := range f.depths {
		if _, ok := f.run(stdout, stderr, "gateway", o, d); !ok {
			return 1
		}
	}
	return 0
}

// loadInProcess starts the echo service and the baseline in this process
// and measures both. The CPU time reported is this process's: the load
// generator's is in it.
func loadInProcess(stdout, stderr io.Writer, f *benchFlags) int {
	if *f.dial.ca != "" || *f.dial.cert != "" || *f.dial.insecure || *f.dial.origin != "" {
		fmt.Fprintln(stderr, "bench: -ca, -cert, -insecure and -origin apply to -addr only")
		return 2
	}
	srv, dir, err := startEcho(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer srv.Stop(context.Background())
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
	login := uint32(*f.login)
	raw := func(listener, transport string, tc *tls.Config) bench.Options {
		return bench.Options{Addr: srv.Gateway.Addr(listener).String(), Transport: transport, TLS: tc, Route: bench.RouteRaw,
			Body: bench.JSONBody, Login: login}
	}
	if *f.dial.ws {
		extras = append(extras, extra{"gateway ws raw", raw("bench_ws", "ws", nil)})
	}
	if *f.dial.tls {
		extras = append(extras, extra{"gateway tls raw", raw("bench_tls", "tcp", clientTLS)})
	}
	if *f.dial.ws && *f.dial.tls {
		extras = append(extras, extra{"gateway wss raw", raw("bench_wss", "ws", clientTLS)})
	}

	base, err := bench.NewEchoServer("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer base.Close()
	fmt.Fprintf(stdout, "%d connections, %v per run after %v warm-up, GOMAXPROCS %d, login route %d; cpu is this process's, the load generator's included\n",
		*f.conns, *f.dur, *f.warmup, runtime.GOMAXPROCS(0), login)
	self := func() (time.Duration, error) { return bench.ProcessCPU(0) }
	for _, d := range f.depths {
		b, ok := f.run(stdout, stderr, "baseline echo", bench.Options{Addr: base.Addr(), Route: bench.RouteRaw, Body: bench.JSONBody, CPU: self}, d)
		if !ok {
			return 1
		}
		rawRes, ok := f.run(stdout, stderr, "gateway forward_raw", bench.Options{Addr: gw, Route: bench.RouteRaw, Body: bench.JSONBody,
			Login: login, CPU: self, Mark: f.profile(stderr, fmt.Sprintf("raw-%d", d))}, d)
		if !ok {
			return 1
		}
		js, ok := f.run(stdout, stderr, "gateway json", bench.Options{Addr: gw, Route: bench.RouteJSON, Body: bench.JSONBody,
			Login: login, CPU: self, Mark: f.profile(stderr, fmt.Sprintf("json-%d", d))}, d)
		if !ok {
			return 1
		}
		fmt.Fprintf(stdout, "%-22s in-flight %-3d raw %.2fx, json %.2fx of the baseline\n", "ratio", d, rawRes.RPS()/b.RPS(), js.RPS()/b.RPS())
		for _, x := range extras {
			r, ok := f.run(stdout, stderr, x.name, x.o, d)
			if !ok {
				return 1
			}
			fmt.Fprintf(stdout, "%-22s in-flight %-3d %.2fx of tcp forward_raw\n", "ratio", d, r.RPS()/rawRes.RPS())
		}
	}
	return 0
}

// startEcho starts the echo config in this process, in a fresh folder the
// caller removes.
func startEcho(stderr io.Writer) (*bootstrap.Server, string, error) {
	dir, err := os.MkdirTemp("", "shield-bench-")
	if err != nil {
		return nil, "", err
	}
	cfgPath, err := bench.WriteEchoConfig(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	srv, err := bootstrap.Start(context.Background(), cfgPath, bootstrap.Options{Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return srv, dir, nil
}

// profile is the Mark of a gateway run named name: with -cpuprofile, a
// CPU profile of its measured time, and with -memprofile the allocation
// profile as that time begins and as it ends. A profile that cannot be
// written is reported and skipped.
func (f *benchFlags) profile(stderr io.Writer, name string) func(begin bool) {
	if *f.cpuprofile == "" && *f.memprofile == "" {
		return nil
	}
	var cpu *os.File
	return func(begin bool) {
		if dir := *f.memprofile; dir != "" {
			suffix := ".allocs.pprof"
			if begin {
				suffix = ".allocs.base.pprof"
			}
			if err := writeProfile("allocs", filepath.Join(dir, name+suffix)); err != nil {
				fmt.Fprintln(stderr, "bench:", err)
			}
		}
		if dir := *f.cpuprofile; dir != "" {
			if begin {
				var err error
				if cpu, err = os.Create(filepath.Join(dir, name+".cpu.pprof")); err == nil {
					err = pprof.StartCPUProfile(cpu)
				}
				if err != nil {
					fmt.Fprintln(stderr, "bench:", err)
				}
				return
			}
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
		}
	}
}

func writeProfile(name, path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	return pprof.Lookup(name).WriteTo(out, 0)
}

// baseline is a baseline server of package bench: the echo or the fan-out loop.
type baseline interface {
	Addr() string
	Close()
}

// serveBaseline serves what start starts (named what) until SIGINT or
// SIGTERM.
func serveBaseline[S baseline](stdout, stderr io.Writer, what string, start func() (S, error)) int {
	s, err := start()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer s.Close()
	fmt.Fprintln(stdout, what, "listening on", s.Addr())
	waitSignal()
	return 0
}

// waitSignal returns at SIGINT or SIGTERM.
func waitSignal() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	<-sigs
}
