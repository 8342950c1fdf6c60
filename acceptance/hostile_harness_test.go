package acceptance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
)

// The hostile tests (issue 19: what a red team did with 12-byte frames and
// a non-reading socket) run the gateway as a process, as the flood tests
// do, in front of testdata/hostile.lua, and measure it from outside: its
// RSS and CPU in /proc, its heap and counters on /metrics, its sockets in
// /proc/net/tcp.

// Routes of testdata/hostile.lua.
const (
	hLogin   = 1
	hWhoami  = 2
	hEcho    = 3
	hBig     = 4
	hPushBig = 5
	hRaise   = 6
	hForge   = 7
	hHoard   = 8
	hChurn   = 9
	hTInsert = 10
	hUnpack  = 11
	hBlob    = 50 // s2c
	hNote    = 51 // s2c
)

// hostileNode is the hostile gateway's node name, which every ref names.
const hostileNode = "gw-hostile"

// hostileSetup is what a hostile test chooses of its gateway's config.
type hostileSetup struct {
	session   string // the session block's keys, flow style without braces
	lua       string // the lua block's keys, likewise
	protocol  string // the game listener's protocol keys, likewise
	instances int    // VMs of the hostile service; 0: 1
	actorKeys string // more keys of the hostile service, each "key: value\n    "
	// actors, when set, replaces the hostile service with these actors
	// (a YAML list indented two spaces) and entry names the entry service.
	actors, entry string
	// schemas is a schemas_dir, or "".
	schemas string
}

// hostileConfig is the config of setup: one game listener, the admin
// server with pprof (its heap profile forces a collection, for live-heap
// readings), JSON logs.
func hostileConfig(t testing.TB, s hostileSetup) string {
	t.Helper()
	script, err := filepath.Abs("testdata/hostile.lua")
	if err != nil {
		t.Fatal(err)
	}
	if s.instances == 0 {
		s.instances = 1
	}
	entry, actors := s.entry, s.actors
	if actors == "" {
		entry = "hostile"
		actors = fmt.Sprintf(`  - name: hostile
    script: %s
    instances: %d
    %srpc:
      routes:
        - {id: %d, name: login, binding: login, requires_auth: false}
        - {id: %d, name: whoami, binding: whoami, requires_auth: false}
        - {id: %d, name: echo, binding: echo, requires_auth: false}
        - {id: %d, name: big, binding: big}
        - {id: %d, name: pushbig, binding: pushbig}
        - {id: %d, name: raise, binding: raise, requires_auth: false}
        - {id: %d, name: forge, binding: forge, requires_auth: false}
        - {id: %d, name: hoard, binding: hoard, requires_auth: false}
        - {id: %d, name: churn, binding: churn, requires_auth: false}
        - {id: %d, name: tinsert, binding: tinsert, requires_auth: false}
        - {id: %d, name: unpack, binding: unpack, requires_auth: false}
        - {id: %d, name: blob, binding: blob, direction: s2c}
        - {id: %d, name: note, binding: note, direction: s2c}
`, script, s.instances, s.actorKeys, hLogin, hWhoami, hEcho, hBig, hPushBig, hRaise, hForge, hHoard, hChurn, hTInsert, hUnpack, hBlob, hNote)
	}
	schemas := ""
	if s.schemas != "" {
		schemas = "  schemas_dir: " + s.schemas + "\n"
	}
	return fmt.Sprintf(`node: {name: %s}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: %s, protocol: {%s}}
  admin: {address: "127.0.0.1:0", pprof: true}
%slog: {format: json, level: info}
lua: {%s}
session: {%s}
actors:
%s`, hostileNode, entry, s.protocol, schemas, s.lua, s.session, actors)
}

// hostileProc is a running hostile gateway.
type hostileProc struct {
	*process
	game, admin string
}

// startHostile runs a gateway process on setup (with o's limits), killed
// at cleanup.
func startHostile(t *testing.T, s hostileSetup, o procOptions) *hostileProc {
	t.Helper()
	p, listeners, admin := startProcessWith(t, hostileConfig(t, s), o)
	return &hostileProc{process: p, game: listeners["game"], admin: admin}
}

// pid is the gateway's process id.
func (h *hostileProc) pid() int { return h.cmd.Process.Pid }

// metric reads one sample from /metrics (name with its labels, as the
// exposition prints them), 0 when absent.
func (h *hostileProc) metric(t testing.TB, name string) float64 {
	t.Helper()
	return scrape(t, h.admin, name)
}

// liveHeap forces a collection in the gateway (its heap profile with
// gc=1) and returns the heap it keeps: the bytes that collection found
// live (go_gc_heap_live_bytes), not counting what the gateway allocated
// after it, as go_memstats_heap_alloc_bytes would.
func (h *hostileProc) liveHeap(t testing.TB) float64 {
	t.Helper()
	resp, err := http.Get("http://" + h.admin + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	live := h.metric(t, "go_gc_heap_live_bytes")
	if live == 0 { // absent from /metrics: every bound would hold
		t.Fatal("no go_gc_heap_live_bytes on /metrics")
	}
	return live
}

// rss is the gateway's resident set in bytes, from /proc.
func (h *hostileProc) rss(t testing.TB) float64 {
	t.Helper()
	return procStatusKB(t, h.pid(), "VmRSS") * 1024
}

// procStatusKB reads one "kB" field of /proc/<pid>/status.
func procStatusKB(t testing.TB, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// cpu is the CPU time the gateway has used, user and system, from
// /proc/<pid>/stat.
func (h *hostileProc) cpu(t testing.TB) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.pid()))
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'. utime and stime are fields 14 and 15, in clock
	// ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// unreadOnPort returns how many established sockets have local port
// port, and how many bytes wait unread in their receive queues, from
// /proc/net/tcp: on the gateway's listening port those are the gateway's
// own ends, so 0 unread means it has read everything its clients sent.
func unreadOnPort(t testing.TB, port int) (sockets, unread int) {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	want := fmt.Sprintf(":%04X", port)
	for sc.Scan() {
		// sl local rem st tx_queue:rx_queue ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 || !strings.HasSuffix(fs[1], want) || fs[3] != "01" {
			continue
		}
		sockets++
		_, rx, _ := strings.Cut(fs[4], ":")
		n, _ := strconv.ParseInt(rx, 16, 64)
		unread += int(n)
	}
	return sockets, unread
}

// portOf is the port of a host:port address.
func portOf(t testing.TB, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// dialHostile connects a client to the game listener, closed at cleanup.
func (h *hostileProc) dial(t testing.TB, o client.Options) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := client.Dial(ctx, h.game, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// callErr makes a request and returns its error (nil for a response),
// failing the test when no answer comes within patience.
func callErr(t testing.TB, c *client.Client, route uint32, req, resp any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := c.Call(ctx, route, req, resp)
	if _, coded := codes.CodeOf(err); err != nil && !coded {
		t.Fatalf("route %d: %v", route, err)
	}
	return err
}

// pollFor polls cond every 20 ms until it holds or d has passed, and
// reports whether it held.
func pollFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// linesOf is the process's log lines with msg, one JSON object a line.
func (p *process) linesOf(msg string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		if l["msg"] == msg {
			j, _ := json.Marshal(l)
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// mib formats a byte count in MiB.
func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
