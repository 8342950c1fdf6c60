package acceptance

// The soak's processes (TestProcessChaosSoak): three nats-servers and
// four gateway nodes run as children, each started again on its own
// config after a kill, signalled, and measured.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/testutil"
)

// soakProc is one child process of the soak, started again on the same
// config (the same ports, the same store) after each kill.
type soakProc struct {
	name, kind       string    // gw-a, gw; svc-1, svc; nats-1, nats
	config, logPath  string    // its config file; its log, every start's appended
	logFrom          int       // the log's length when the running process started
	since            time.Time // and when that was
	admin, health    string    // a node's admin server; a nats-server's profiling and monitoring ports
	cmd              *exec.Cmd
	done             chan error // the exit; whoever reads it puts it back
	starts, selfExit int
}

// exited reports whether the process has ended, and how.
func (p *soakProc) exited() (error, bool) {
	select {
	case err := <-p.done:
		p.done <- err
		return err, true
	default:
		return nil, false
	}
}

// logged is the log of the running (or last) process.
func (p *soakProc) logged() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b[min(p.logFrom, len(b)):])
}

// soakTail is the last n lines of text.
func soakTail(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// soakCluster is the soak's seven processes and their addresses. Only the
// test's goroutine starts, signals and restarts them; the clients use
// the fixed addresses alone.
type soakCluster struct {
	t        *testing.T
	st       *soakStats
	procs    []*soakProc
	byName   map[string]*soakProc
	game, kv [2]string // gw-a's and gw-b's game and kv probe listeners
	http     *http.Client
	nats, gw string          // the nats-server and gateway binaries
	began    time.Time       // the log's times count from it
	isolated map[string]bool // the nodes the last fault cut off
	split    bool            // the last fault was a nats-server's: it may part the NATS cluster
}

// startSoakCluster builds nats-server (into the test's temp dir, removed
// with it; the build cache makes the next build cheap), starts three
// clustered with JetStream and, once they are healthy, the four nodes on
// them, and waits until every node is ready and sees the others.
func startSoakCluster(t *testing.T, st *soakStats) *soakCluster {
	t.Helper()
	// No keep-alive: an idle connection's goroutines would outlive the
	// test; the timeout bounds a request to a paused process.
	c := &soakCluster{t: t, st: st, byName: map[string]*soakProc{}, began: time.Now(),
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	c.nats = filepath.Join(t.TempDir(), "nats-server")
	if out, err := exec.Command("go", "build", "-o", c.nats, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("go build nats-server: %v\n%s", err, out)
	}
	var err error
	if c.gw, err = buildGateway(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	addr := func() string {
		for {
			if a := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t)); !seen[a] {
				seen[a] = true
				return a
			}
		}
	}
	var listen, routes, urls []string
	for range 3 {
		listen, routes = append(listen, addr()), append(routes, "nats://"+addr())
		urls = append(urls, "nats://"+listen[len(listen)-1])
	}
	for i := range 3 {
		dir := t.TempDir()
		p := &soakProc{name: fmt.Sprintf("nats-%d", i+1), kind: "nats", admin: addr(), health: addr(),
			config: filepath.Join(dir, "nats.conf"), logPath: filepath.Join(dir, "nats.log")}
		_, prof, _ := strings.Cut(p.admin, ":")
		// lame_duck_duration's least is 30s; with a handful of clients the
		// server closes one a second after the grace period, then exits.
		testutil.WriteFile(t, p.config, fmt.Sprintf("server_name: %s\nlisten: %s\nhttp: %q\nprof_port: %s\n"+
			"jetstream { store_dir: %q }\ncluster { name: shield-soak, listen: %q, routes: [%s] }\n"+
			"lame_duck_duration: 30s\nlame_duck_grace_period: 1s\n", p.name, listen[i], p.health, prof, filepath.Join(dir, "store"),
			strings.TrimPrefix(routes[i], "nats://"), strings.Join(append(append([]string{}, routes[:i]...), routes[i+1:]...), ", ")))
		c.add(p)
	}
	// A node with storage does not start while NATS is unreachable (it
	// exits: "max_value_bytes 4096 is more than NATS carries (max_payload
	// 0, ...)"), so the nodes wait for JetStream.
	c.settle()
	script, _ := filepath.Abs("testdata/kv.lua")
	actors := exampleClusterActors(t) + fmt.Sprintf("  - name: kv\n    script: %q\n    rpc:\n      routes:\n"+
		"        - {id: %d, name: put, binding: put, requires_auth: false}\n        - {id: %d, name: get, binding: get, requires_auth: false}\n",
		script, soakRoutePut, soakRouteGet)
	for i, n := range []struct{ name, services string }{{"gw-a", "[auth]"}, {"gw-b", "[]"}, {"svc-1", "[player/0, room]"}, {"svc-2", "[player/1, kv]"}} {
		// Started together, as a deployment starts them: the two service
		// nodes create the replicated buckets at once (kv retries a try
		// JetStream leaves unanswered) and heartbeat JOINING meanwhile.
		dir := t.TempDir()
		p := &soakProc{name: n.name, kind: n.name[:strings.IndexByte(n.name, '-')], admin: addr(),
			config: filepath.Join(dir, "node.yaml"), logPath: filepath.Join(dir, "node.log")}
		listeners, storage := "", ""
		if p.kind == "gw" {
			c.game[i], c.kv[i] = addr(), addr()
			listeners = fmt.Sprintf("  listeners:\n    - {name: game, address: %q, entry_service: auth}\n"+
				"    - {name: kv, address: %q, entry_service: kv}\n", c.game[i], c.kv[i])
		} else {
			storage = fmt.Sprintf("storage: {data_dir: %q, replicas: 3, buckets: [{name: players, max_value_bytes: 4096}, {name: b}]}\n", dir)
		}
		// auth_timeout off: the kv probe's sessions never log in.
		testutil.WriteFile(t, p.config, fmt.Sprintf("node: {name: %s, services: %s}\ncluster: {nats: %q, heartbeat: 1s, node_timeout: 3s}\n"+
			"network:\n%s  admin: {address: %q}\nlog: {format: json, level: info}\n"+
			"session: {duplicate_login: kick_old, auth_timeout: 0s, shutdown_grace: 2s, max_sessions: 10000}\n%s%s",
			p.name, n.services, strings.Join(urls, ", "), listeners, p.admin, storage, actors))
		c.add(p)
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			if t.Failed() {
				b, _ := os.ReadFile(p.logPath)
				t.Logf("the end of %s's log:\n%s", p.name, soakTail(string(b), 40))
			}
		}
	})
	c.settle()
	return c
}

// add starts p for the first time.
func (c *soakCluster) add(p *soakProc) {
	c.procs = append(c.procs, p)
	c.byName[p.name] = p
	c.start(p)
}

// start starts p's process on its config, its output appended to its
// log file, with a cleanup that kills it and waits. Readiness is
// settle's to wait for.
func (c *soakCluster) start(p *soakProc) {
	t := c.t
	t.Helper()
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the child has its own copy
	fi, _ := f.Stat()
	p.starts, p.logFrom, p.since = p.starts+1, int(fi.Size()), time.Now()
	cmd := exec.Command(c.nats, "-c", p.config)
	if p.kind != "nats" {
		cmd = exec.Command(c.gw, "run", "-c", p.config)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	p.cmd, p.done = cmd, done
	t.Cleanup(func() {
		cmd.Process.Kill()
		c.waitExit(p, 10*time.Second)
	})
}

// inject makes one fault on p, waits until the cluster is ready again,
// and then until calls succeed again.
func (c *soakCluster) inject(kind string, p *soakProc) {
	t, st := c.t, c.st
	t.Helper()
	label := kind + " " + p.kind
	st.mu.Lock()
	st.fault = label
	st.faults[label]++
	st.mu.Unlock()
	t.Logf("%6.1fs %s (%s)", time.Since(c.began).Seconds(), label, p.name)
	// The nodes this fault cuts off: p, or the nodes on nats-server p.
	// Only they may be declared dead for it (settle).
	c.isolated = map[string]bool{p.name: true}
	c.split = p.kind == "nats"
	if c.split {
		var connz struct{ Connections []struct{ Name string } }
		_, body := c.get("http://" + p.health + "/connz")
		_ = json.Unmarshal([]byte(body), &connz)
		for _, conn := range connz.Connections {
			c.isolated[strings.TrimPrefix(conn.Name, "shield ")] = true
		}
	}
	switch kind {
	case "kill":
		c.signal(p, syscall.SIGKILL)
		c.waitExit(p, 10*time.Second)
		time.Sleep(500 * time.Millisecond)
		c.start(p)
	case "stop":
		c.signal(p, syscall.SIGSTOP)
		time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Millisecond)
		c.signal(p, syscall.SIGCONT)
	case "restart":
		sig := syscall.SIGTERM // a node drains (shutdown_grace 2s) and leaves
		if p.kind == "nats" {
			sig = syscall.SIGUSR2 // lame-duck mode: its clients move, then it exits
		}
		c.signal(p, sig)
		c.waitExit(p, 30*time.Second)
		c.start(p)
	}
	c.settle()
	if ok := st.get("ok"); !soakWithin(10*time.Second, func() bool { return st.get("ok") >= ok+10 }) {
		t.Errorf("no calls succeeded within 10s of the cluster being ready after %s of %s", label, p.name)
	}
}

func (c *soakCluster) signal(p *soakProc, sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		c.t.Logf("%v to %s: %v", sig, p.name, err) // it exited on its own: settle starts it again
	}
}

func (c *soakCluster) waitExit(p *soakProc, d time.Duration) {
	c.t.Helper()
	if !soakWithin(d, func() bool { _, ok := p.exited(); return ok }) {
		c.t.Fatalf("%s did not exit within %v", p.name, d)
	}
}

// settle starts again whatever exited on its own, and waits until every
// nats-server is healthy (JetStream current, so that the next fault
// leaves a quorum) and every node is ready and sees the three others;
// then the clients get a second to come back. A node the others declared
// dead exits with status 1 (docs/cluster.md "Presence"): right for one
// the last fault cut off (it was paused, or its nats-server was), a
// violation for any other: one a cut-off node judged silent while it
// heard nobody ("healthy node declared dead"), or one that had not served
// yet ("declared dead while starting": a starting node heartbeats
// JOINING). A healthy node declared dead by a node on the nats-server
// the fault hit is the race a partition leaves (that server's routes
// re-form and lose what was in flight, so each side hears the other fall
// silent; verdicts are weighed by side, docs/cluster.md "Verdicts", but
// two against two can go to whichever half judged first): counted, not a
// violation. Any other exit fails the test.
func (c *soakCluster) settle() {
	t := c.t
	t.Helper()
	var unready []string
	if !soakWithin(60*time.Second, func() bool {
		unready = nil
		for _, p := range c.procs {
			if err, ok := p.exited(); ok {
				text := p.logged()
				t.Logf("%6.1fs %s exited on its own (%v):\n%s", time.Since(c.began).Seconds(), p.name, err, soakTail(text, 3))
				dead := p.kind != "nats" && strings.Contains(text, "declared this node dead") && !strings.Contains(text, "panic")
				if !dead {
					t.Errorf("%s exited, not because it was declared dead", p.name)
				} else if !strings.Contains(text, "cluster: node serving") {
					c.st.violation("declared dead while starting", "%s, gone within %v of its start:\n%s", p.name,
						time.Since(p.since).Round(100*time.Millisecond), soakTail(text, 8))
				} else if by := soakDeclarer(text); !c.isolated[p.name] && c.split && c.isolated[by] {
					// A partition's race (docs/cluster.md "What each
					// fault looks like"): the cut-off side judged first.
					c.st.add("declared dead by a cut-off node")
				} else if !c.isolated[p.name] {
					c.st.violation("healthy node declared dead", "%s by %s (cut off: %v):\n%s", p.name, by, c.isolated, soakTail(text, 8))
				}
				p.selfExit++
				c.start(p)
			}
			if p.kind == "nats" {
				if code, _ := c.get("http://" + p.health + "/healthz"); code != 200 {
					unready = append(unready, p.name)
				}
			} else if code, _ := c.get("http://" + p.admin + "/readyz"); code != 200 || c.metric(p, "shield_cluster_nodes") != 4 {
				unready = append(unready, p.name)
			}
		}
		return unready == nil
	}) {
		t.Fatalf("not ready within 60s: %v", unready)
	}
	time.Sleep(time.Second)
}

// soakDeclarer is the node that declared this one dead, from its last
// words: "cluster: node X declared this node dead".
func soakDeclarer(log string) string {
	before, _, ok := strings.Cut(log, " declared this node dead")
	if i := strings.LastIndex(before, "cluster: node "); ok && i >= 0 {
		return before[i+len("cluster: node "):]
	}
	return ""
}

// get fetches url, bounded by the client's timeout.
func (c *soakCluster) get(url string) (int, string) {
	resp, err := c.http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric is one unlabelled series of a node's /metrics, -1 if unread.
func (c *soakCluster) metric(p *soakProc, name string) float64 {
	_, body := c.get("http://" + p.admin + "/metrics")
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return -1
}

// soakSample is one process's size at one moment.
type soakSample struct {
	pid, goroutines int
	rssKB           float64
}

// sample reads every process's RSS (/proc/PID/status VmRSS) and
// goroutines: a node's go_goroutines, a nats-server's goroutine profile.
func (c *soakCluster) sample() map[string]soakSample {
	out := map[string]soakSample{}
	for _, p := range c.procs {
		s := soakSample{pid: p.cmd.Process.Pid, goroutines: -1}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				s.rssKB, _ = strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			}
		}
		if p.kind != "nats" {
			s.goroutines = int(c.metric(p, "go_goroutines"))
		} else if _, body := c.get("http://" + p.admin + "/debug/pprof/goroutine?debug=1"); strings.HasPrefix(body, "goroutine profile: total ") {
			first, _, _ := strings.Cut(body[len("goroutine profile: total "):], "\n")
			s.goroutines, _ = strconv.Atoi(first)
		}
		out[p.name] = s
	}
	return out
}

// waitIdle waits until both gateways hold no session, then gives the
// nodes two seconds to wind down what those sessions left.
func (c *soakCluster) waitIdle() {
	sessions := func() float64 {
		return c.metric(c.byName["gw-a"], "shield_sessions") + c.metric(c.byName["gw-b"], "shield_sessions")
	}
	if !soakWithin(20*time.Second, func() bool { return sessions() == 0 }) {
		c.t.Errorf("%v sessions still open 20s after every client closed", sessions())
	}
	time.Sleep(2 * time.Second)
}

// soakWithin polls cond every 50 ms until it holds (true) or d has passed
// (false).
func soakWithin(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
