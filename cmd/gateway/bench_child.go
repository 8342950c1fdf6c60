package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shieldrpc/shield/bench"
)

// childEnv marks a process that gateway bench started as its gateway: a
// test binary (which is what os.Executable names under go test) runs the
// command line it was given instead of its tests when it is set (see
// TestMain).
const childEnv = "SHIELD_BENCH_CHILD"

// child is a gateway process that gateway bench started on the echo
// config, so that what is measured of it (its memory, its CPU) is its
// alone, and that it holds its own half of the sockets' descriptors.
type child struct {
	cmd    *exec.Cmd
	dir    string
	listen string // the bench listener (plain tcp)
	fan    string // the fan listener
	admin  string
}

// startChild writes the echo config with free ports into a fresh folder
// and starts `gateway run` on it, and returns once the child is ready.
func startChild(stderr io.Writer) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "shield-bench-child-")
	if err != nil {
		return nil, err
	}
	c := &child{dir: dir}
	ports := make([]string, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	c.listen, c.fan, c.admin = ports[0], ports[1], ports[2]
	cfg, err := bench.EchoConfig{Listen: c.listen, Fan: c.fan, Admin: c.admin}.Write(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, c.spawn(stderr, exe, cfg)
}

// spawnChild starts `gateway run` on the config at cfg in dir (which the
// child then owns), whose admin server is at admin, and returns once it is
// ready.
func spawnChild(stderr io.Writer, dir, cfg, listen, admin string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &child{dir: dir, listen: listen, admin: admin}
	return c, c.spawn(stderr, exe, cfg)
}

func (c *child) spawn(stderr io.Writer, exe, cfg string) error {
	dir := c.dir
	c.cmd = exec.Command(exe, "run", "-c", cfg)
	c.cmd.Env = append(os.Environ(), childEnv+"=1")
	c.cmd.Stdout, c.cmd.Stderr = io.Discard, stderr
	if err := c.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ok, _ := c.get("/readyz"); ok {
			return nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return fmt.Errorf("the gateway process was not ready within 30s")
		}
	}
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// get fetches path from the child's admin server and reports whether it
// answered 200, with the body.
func (c *child) get(path string) (bool, string) {
	cl := http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Get("http://" + c.admin + path)
	if err != nil {
		return false, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, string(b)
}

// metric reads one unlabelled sample of the child's /metrics.
func (c *child) metric(name string) float64 {
	_, body := c.get("/metrics")
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

// stop ends the child (SIGTERM: it drains, which with no session left is
// at once; after 15 s it is killed) and removes its folder.
func (c *child) stop() {
	defer os.RemoveAll(c.dir)
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(done)
	}()
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// freePort returns a loopback address with a port free now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
