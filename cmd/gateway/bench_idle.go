package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shieldrpc/shield/bench"
)

// idleWatch is how long the CPU time of a gateway holding idle sessions is
// watched.
const idleWatch = 3 * time.Second

// idleSettle is how long the sessions idle before the memory reading: a
// gateway on Linux parks an idle connection after a second and gives the
// parked read loops' stacks back to the OS two seconds after a wave of
// parks (gateway/park_linux.go).
const idleSettle = 4 * time.Second

// idleMemory opens -idle sessions, logged in on -login, to a gateway
// process and reports how much its resident memory grew per session, and
// the CPU it used while they idled. The gateway is a child process started
// on the echo config, or with -addr and -pid a running one; either way
// its memory is its own, without the clients' half of the sockets. With
// an admin address (the child's, or -admin for -addr), a collection runs
// before each reading, and the heap, stacks and goroutines are reported.
func idleMemory(stdout, stderr io.Writer, f *benchFlags) int {
	n := *f.idle
	addr, pid := *f.addr, *f.pid
	c := &child{admin: *f.adminAddr} // with -addr, -admin (if any) is the running gateway's
	if addr != "" {
		if pid == 0 {
			fmt.Fprintln(stderr, "bench: -idle with -addr needs -pid PID, the gateway's process")
			return 2
		}
	} else {
		var err error
		if c, err = startChild(stderr); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer c.stop()
		addr, pid = c.listen, c.pid()
	}
	raiseFileLimit(stderr, n+1024)
	settle := func(d time.Duration) {
		if c.admin != "" {
			c.get("/debug/pprof/heap?gc=1") // a collection, so that garbage of the start and the logins is not counted
		}
		time.Sleep(d)
	}
	settle(time.Second)
	rss0, err := bench.ProcessRSS(pid)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns, err := bench.DialIdle(ctx, addr, n, uint32(*f.login))
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	cpuS, err := bench.ProcessCPU(pid)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	settle(idleSettle)
	rss1, err := bench.ProcessRSS(pid)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	cpu0, _ := bench.ProcessCPU(pid)
	time.Sleep(idleWatch)
	cpu1, _ := bench.ProcessCPU(pid)
	fmt.Fprintf(stdout, "%d idle sessions (login route %d): RSS %+d KiB = %.1f KiB per session; CPU while idle %v over %v (%v over the %v they settled)\n",
		len(conns), *f.login, (rss1-rss0)>>10, float64(rss1-rss0)/1024/float64(len(conns)), cpu1-cpu0, idleWatch, cpu0-cpuS, idleSettle)
	if c.admin != "" && *f.memprofile != "" {
		path := filepath.Join(*f.memprofile, "idle.heap.pprof")
		if _, body := c.get("/debug/pprof/heap?gc=1"); body == "" || os.WriteFile(path, []byte(body), 0o644) != nil {
			fmt.Fprintln(stderr, "bench: cannot write", path)
		}
	}
	if c.admin != "" {
		heap, stack, g := c.metric("go_memstats_heap_inuse_bytes"), c.metric("go_memstats_stack_inuse_bytes"), c.metric("go_goroutines")
		fmt.Fprintf(stdout, "%-22s heap in use %.0f KiB, stacks %.0f KiB, %.0f goroutines (%.2f per session)\n", "gateway process",
			heap/1024, stack/1024, g, g/float64(len(conns)))
	}
	return 0
}

// raiseFileLimit raises this process's open-file limit to at least want,
// as far as the hard limit allows (further as root).
func raiseFileLimit(stderr io.Writer, want int) {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil || lim.Cur >= uint64(want) {
		return
	}
	lim.Cur = uint64(want)
	if lim.Max < lim.Cur {
		lim.Max = lim.Cur
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		lim.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) != nil || lim.Cur < uint64(want) {
			fmt.Fprintf(stderr, "bench: cannot raise the open-file limit to %d (%v)\n", want, err)
		}
	}
}
