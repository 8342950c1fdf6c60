package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shieldrpc/shield/bench"
)

// roomsFlags are the -rooms mode's own flags.
type roomsFlags struct {
	rooms, members, hz, fields, changing, nodes *int
}

// roomsCmd is docs/rooms.md §14: -rooms rooms of -members members at -hz,
// a -fields field state with -changing fields changing per tick, each
// member sending -hz inputs a second; the room kind, then the baseline
// (the same game on shield.timeout), each on fresh server processes: one
// gateway with everything, or with -nodes 2 a gateway (the lobby, the
// embedded NATS) and two service nodes sharing the rooms.
func roomsCmd(stdout, stderr io.Writer, f *benchFlags, rf roomsFlags) int {
	// Several server processes write their logs to stderr at once: os/exec
	// copies each one's on a goroutine of its own.
	stderr = &syncWriter{w: stderr}
	raiseFileLimit(stderr, 2*(*rf.rooms)*(*rf.members)+1024)
	fmt.Fprintf(stdout, "rooms: %d rooms x %d members at %d Hz, %d fields (%d changing per tick), %d service node(s); %v per run after %v warm-up\n",
		*rf.rooms, *rf.members, *rf.hz, *rf.fields, *rf.changing, max(*rf.nodes, 1), *f.dur, *f.warmup)
	for _, baseline := range []bool{false, true} {
		name := "room kind"
		if baseline {
			name = "shield.timeout baseline"
		}
		if err := roomsRun(stdout, stderr, f, rf, name, baseline); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
	}
	return 0
}

// roomsServers are a run's processes: the gateway's listener, and the
// processes that host the rooms (the gateway itself with one node).
type roomsServers struct {
	all, hosts []*child
	gw         *child
}

func (s *roomsServers) stop() {
	for _, c := range slices.Backward(s.all) {
		c.stop()
	}
}

func startRoomsServers(stderr io.Writer, hz, nodes int) (*roomsServers, error) {
	s := &roomsServers{}
	start := func(c bench.RoomsConfig) (*child, error) {
		dir, err := os.MkdirTemp("", "shield-bench-rooms-")
		if err != nil {
			return nil, err
		}
		if c.Listen, err = freePort(); err == nil {
			c.Admin, err = freePort()
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.Hz = hz
		cfg, err := c.Write(dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		ch, err := spawnChild(stderr, dir, cfg, c.Listen, c.Admin)
		if err == nil {
			s.all = append(s.all, ch)
		}
		return ch, err
	}
	if nodes <= 1 {
		gw, err := start(bench.RoomsConfig{})
		if err != nil {
			return nil, err
		}
		s.gw, s.hosts = gw, []*child{gw}
		return s, nil
	}
	nats, err := freePort()
	if err != nil {
		return nil, err
	}
	gw, err := start(bench.RoomsConfig{Node: "gw", Services: "[lobby]", NATS: nats, Embedded: true})
	if err != nil {
		return nil, err
	}
	s.gw = gw
	// The baseline's 8 timer instances are split between the nodes as
	// the rooms are.
	for i := range nodes {
		var timers []string
		for inst := i; inst < 8; inst += nodes {
			timers = append(timers, "timer/"+strconv.Itoa(inst))
		}
		svc, err := start(bench.RoomsConfig{Node: "svc-" + strconv.Itoa(i+1), Services: "[bench_room, " + strings.Join(timers, ", ") + "]",
			NATS: "nats://" + nats, ServiceNode: true})
		if err != nil {
			s.stop()
			return nil, err
		}
		s.hosts = append(s.hosts, svc)
	}
	// The gateway serves once the cluster says every instance is hosted.
	for deadline := time.Now().Add(30 * time.Second); gw.metric("shield_cluster_nodes") < float64(nodes+1); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("the cluster did not form within 30s")
		}
	}
	return s, nil
}

// roomsRun is one run on fresh processes, and its report lines.
func roomsRun(stdout, stderr io.Writer, f *benchFlags, rf roomsFlags, name string, baseline bool) error {
	s, err := startRoomsServers(stderr, *rf.hz, *rf.nodes)
	if err != nil {
		return err
	}
	defer s.stop()
	rssBefore := make([]int64, len(s.all))
	for i, c := range s.all {
		rssBefore[i], _ = bench.ProcessRSS(c.pid())
	}
	// The CPU times are read first, at once (/proc), then the metrics
	// (HTTP, slow on a loaded machine); each window is timed on its own.
	type snapshot struct {
		cpus       []time.Duration
		cpuAt, mAt time.Time
		ms         []map[string]float64
	}
	snap := func() snapshot {
		sn := snapshot{cpus: make([]time.Duration, len(s.all)), ms: make([]map[string]float64, len(s.all)), cpuAt: time.Now()}
		for i, c := range s.all {
			sn.cpus[i], _ = bench.ProcessCPU(c.pid())
		}
		sn.mAt = time.Now()
		for i, c := range s.all {
			_, body := c.get("/metrics")
			sn.ms[i] = samples(body)
		}
		return sn
	}
	var s0, s1 snapshot
	var rssAfter []int64
	o := bench.RoomsOptions{Addr: s.gw.listen, Rooms: *rf.rooms, Members: *rf.members, Hz: *rf.hz, Fields: *rf.fields,
		Changing: *rf.changing, Baseline: baseline, Duration: *f.dur, Warmup: *f.warmup, Measuring: func(begin bool) {
			if begin {
				rssAfter = make([]int64, len(s.all))
				for i, c := range s.all {
					rssAfter[i], _ = bench.ProcessRSS(c.pid())
				}
				s0 = snap()
			} else {
				s1 = snap()
			}
		}}
	r, err := bench.Rooms(context.Background(), o)
	if err != nil {
		return err
	}
	// The room-ticks the members got (frames per member): an overloaded
	// server ticks fewer than rooms × hz, the baseline fewer still.
	roomTicks := math.Max(1, float64(r.Frames)/float64(*rf.members))
	fmt.Fprintf(stdout, "%-24s clients: %s\n", name, r)
	fmt.Fprintf(stdout, "%-24s room-ticks delivered %.0f/s of %d/s\n", "", roomTicks/r.Elapsed.Seconds(), *rf.rooms**rf.hz)
	fmt.Fprintf(stdout, "%-24s bytes per member per tick %.1f (state bodies, idlen)\n", "", float64(r.Bytes)/math.Max(1, float64(r.Frames)))
	cpu0, cpu1, m0, m1 := s0.cpus, s1.cpus, s0.ms, s1.ms
	cpuWindow, mWindow := s1.cpuAt.Sub(s0.cpuAt), s1.mAt.Sub(s0.mAt)
	// Per room-tick over the CPU window: the room-ticks delivered at the
	// clients' rate.
	roomTicks *= cpuWindow.Seconds() / r.Elapsed.Seconds()
	var total time.Duration
	for i, c := range s.all {
		cpu := cpu1[i] - cpu0[i]
		total += cpu
		role := "gateway"
		if len(s.all) > 1 && c != s.gw {
			role = fmt.Sprintf("service node %d", i)
		}
		fmt.Fprintf(stdout, "%-24s %-15s cpu %5.2f cores, %6s per room-tick; rss growth per room %.1f KiB (with its members' sessions on a gateway)\n", "", role,
			cpu.Seconds()/cpuWindow.Seconds(), time.Duration(float64(cpu)/roomTicks),
			float64(rssAfter[i]-rssBefore[i])/1024/float64(*rf.rooms))
	}
	fmt.Fprintf(stdout, "%-24s all processes   cpu %6s per room-tick\n", "", time.Duration(float64(total)/roomTicks))
	if !baseline {
		ticks, encodes, inputs := 0.0, 0.0, 0.0
		var lat []bucket
		for i := range s.hosts {
			j := slices.Index(s.all, s.hosts[i])
			ticks += m1[j][`shield_room_ticks_total{kind="bench_room"}`] - m0[j][`shield_room_ticks_total{kind="bench_room"}`]
			inputs += m1[j][`shield_room_inputs_total{kind="bench_room"}`] - m0[j][`shield_room_inputs_total{kind="bench_room"}`]
			for _, fr := range []string{"snapshot", "delta"} {
				k := `shield_room_state_encodes_total{frame="` + fr + `",kind="bench_room"}`
				encodes += m1[j][k] - m0[j][k]
			}
			lat = addBuckets(lat, m0[j], m1[j], "shield_room_tick_lateness_seconds_bucket")
		}
		fmt.Fprintf(stdout, "%-24s server: tick lateness p50 %s p99 %s (histogram_quantile over §13's buckets), ticks %.0f/s, inputs handled %.0f/s, encodes per tick %.2f\n", "",
			quantile(lat, 0.5), quantile(lat, 0.99), ticks/mWindow.Seconds(), inputs/mWindow.Seconds(), encodes/math.Max(1, ticks))
	}
	return nil
}

// samples reads a Prometheus text exposition: each sample by its name
// with labels, as written.
func samples(body string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// bucket is one cumulative histogram bucket's count over the measured time.
type bucket struct {
	le    float64
	count float64
}

// addBuckets adds the measured counts of histogram name (kind bench_room)
// between m0 and m1 to bs.
func addBuckets(bs []bucket, m0, m1 map[string]float64, name string) []bucket {
	prefix := name + `{kind="bench_room",le="`
	for k, v := range m1 {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64)
		if err != nil {
			le = math.Inf(1)
		}
		i := slices.IndexFunc(bs, func(b bucket) bool { return b.le == le })
		if i < 0 {
			bs = append(bs, bucket{le: le})
			i = len(bs) - 1
		}
		bs[i].count += v - m0[k]
	}
	slices.SortFunc(bs, func(a, b bucket) int {
		switch {
		case a.le < b.le:
			return -1
		case a.le > b.le:
			return 1
		}
		return 0
	})
	return bs
}

// quantile is Prometheus's histogram_quantile: linear within the bucket
// the rank falls in.
func quantile(bs []bucket, q float64) time.Duration {
	if len(bs) == 0 || bs[len(bs)-1].count == 0 {
		return 0
	}
	rank := q * bs[len(bs)-1].count
	lo, below := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return time.Duration(lo * float64(time.Second)) // past the last bound: that bound
			}
			frac := (rank - below) / math.Max(b.count-below, 1e-9)
			return time.Duration((lo + (b.le-lo)*frac) * float64(time.Second))
		}
		lo, below = b.le, b.count
	}
	return time.Duration(lo * float64(time.Second))
}

// syncWriter serialises the writes of several goroutines to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
