package acceptance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/internal/wiretest"
)

// process is a gateway binary run as a child, with its JSON log lines.
type process struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []map[string]any
	done  chan error
}

// TestMain removes the gateway binary that the process tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// builtDir holds the built binary, for TestMain to remove.
var builtDir string

// buildGateway builds cmd/gateway once per test binary (TestMain removes
// it). SHIELD_GATEWAY_BIN names a binary to run instead, such as an older
// commit's for the figures of the hostile tests.
var buildGateway = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("SHIELD_GATEWAY_BIN"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "shield-gateway-bin-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "gateway")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/gateway").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// drainConfig serves testdata/drain.lua; session holds extra session keys.
func drainConfig(session string) string {
	script, _ := filepath.Abs("testdata/drain.lua")
	return fmt.Sprintf(drainYAML, session, script)
}

const drainYAML = `node: {name: gw-drain}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: drain}
  admin: {address: "127.0.0.1:0"}
log: {format: json, level: info}
session: {%s}
actors:
  - name: drain
    script: %s
    instances: 2
    rpc:
      routes:
        - {id: 1, name: login, binding: login, requires_auth: false}
        - {id: 2, name: slow, binding: slow}
`

// startProcess runs the gateway binary on config and waits for its
// listening lines; it returns the game listener's and the admin server's
// addresses.
func startProcess(t *testing.T, config string) (*process, string, string) {
	t.Helper()
	p, listeners, admin := startProcessWith(t, config, procOptions{})
	return p, listeners["game"], admin
}

// procOptions says how startProcessWith runs the gateway.
type procOptions struct {
	// openFiles, when above 0, is the open-file limit (soft and hard) the
	// process starts under, as `ulimit -n` sets it in a shell; softFiles,
	// when above 0, lowers the soft limit alone below it.
	openFiles, softFiles int
}

// startProcessWith runs the gateway binary on config, as o says, and waits
// for its listening lines; it returns every listener's address by name and
// the admin server's address.
func startProcessWith(t *testing.T, config string, o procOptions) (*process, map[string]string, string) {
	t.Helper()
	bin, err := buildGateway()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "actors.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "-c", cfg)
	if o.openFiles > 0 {
		soft := o.openFiles
		if o.softFiles > 0 {
			soft = o.softFiles
		}
		// exec keeps the pid, so the process's /proc entry is the gateway's.
		cmd = exec.Command("bash", "-c", `ulimit -n "$1" && ulimit -Sn "$2" && exec "$3" run -c "$4"`,
			"bash", strconv.Itoa(o.openFiles), strconv.Itoa(soft), bin, cfg)
	}
	p := &process{cmd: cmd, done: make(chan error, 1)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	addrs := make(chan string, 1)
	listeners := map[string]string{}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				line = map[string]any{"raw": sc.Text()} // a start error is plain text
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			switch line["msg"] {
			case "listening":
				name, _ := line["listener"].(string)
				listeners[name], _ = line["address"].(string)
			case "admin listening":
				a, _ := line["address"].(string)
				addrs <- a
			}
		}
		p.done <- p.cmd.Wait()
	}()
	select {
	case a := <-addrs:
		return p, listeners, a
	case err := <-p.done:
		p.done <- err
		t.Fatalf("the gateway exited at start: %v\n%s", err, p.dump())
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not start")
	}
	return nil, nil, ""
}

// dump is the process's log, one JSON line per line, for a failure.
func (p *process) dump() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// count returns how many log lines have msg and the given attributes.
func (p *process) count(msg string, attrs map[string]string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
next:
	for _, l := range p.lines {
		if l["msg"] != msg {
			continue
		}
		for k, v := range attrs {
			if fmt.Sprint(l[k]) != v {
				continue next
			}
		}
		n++
	}
	return n
}

func readyz(addr string) int {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestDrainOnSIGTERM: readiness goes false, live sessions are served until
// the grace ends, then each gets gateway.draining and is closed, every
// client_disconnected and every stop runs, and the process exits 0.
func TestDrainOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	p, game, adminAddr := startProcess(t, drainConfig("shutdown_grace: 1s"))
	if code := readyz(adminAddr); code != http.StatusOK {
		t.Fatalf("readyz before the drain: %d", code)
	}
	const sessions = 20
	var notices sync.WaitGroup
	notices.Add(sessions)
	clients := make([]*client.Client, sessions)
	for i := range clients {
		c, err := client.Dial(context.Background(), game, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var once sync.Once
		c.OnNotice(func(code, _ string) {
			if code == string(codes.GatewayDraining) {
				once.Do(notices.Done)
			}
		})
		call(t, c, 1, map[string]string{"user": fmt.Sprintf("p%d", i)}, nil)
		clients[i] = c
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wiretest.Eventually(t, "readyz to go false", func() bool { return readyz(adminAddr) == http.StatusServiceUnavailable })
	// During the grace, live sessions are still served.
	var slept map[string]int
	call(t, clients[0], 2, map[string]int{"ms": 10}, &slept)

	waitGroup(t, &notices, 10*time.Second, "every session's gateway.draining notice")
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the gateway did not exit")
	}
	if n := p.count("client_disconnected", map[string]string{"reason": "draining"}); n != sessions {
		t.Errorf("client_disconnected ran %d times with reason draining, want %d", n, sessions)
	}
	if n := p.count("stop ran", nil); n != 2 {
		t.Errorf("stop ran %d times, want once per VM (2)", n)
	}
}

// TestSecondSignalExitsAtOnce: a second signal during the drain exits
// with status 1 without waiting for the grace.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	p, game, _ := startProcess(t, drainConfig("shutdown_grace: 60s"))
	c, err := client.Dial(context.Background(), game, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call(t, c, 1, map[string]string{"user": "stays"}, nil)
	p.cmd.Process.Signal(syscall.SIGTERM)
	wiretest.Eventually(t, "the drain to start", func() bool { return p.count("draining", nil) == 1 })
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit: %v, want status 1", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway did not exit on the second signal")
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
	}
}
