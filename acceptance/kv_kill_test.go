package acceptance

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kvKillYAML serves testdata/kv.lua with a store in a data_dir given by
// absolute path, so that a second process finds the first one's files.
const kvKillYAML = `node: {name: gw-kv}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: kv}
  admin: {address: "127.0.0.1:0"}
log: {format: json, level: info}
storage:
  data_dir: %q
  buckets:
    - {name: b, max_value_bytes: 1024}
actors:
  - name: kv
    script: %q
    rpc:
      routes:
        - {id: 1, name: put, binding: put, requires_auth: false}
        - {id: 2, name: get, binding: get, requires_auth: false}
`

// TestKVKillNine: a put acknowledged to the client is on disk: the
// gateway process is killed with SIGKILL right after the last
// acknowledgement, restarted on the same data_dir, and every put is
// there with its revision; the next write gets a larger one.
func TestKVKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	script, _ := filepath.Abs("testdata/kv.lua")
	cfg := fmt.Sprintf(kvKillYAML, filepath.Join(t.TempDir(), "store"), script)

	type put struct {
		Rev float64 `json:"rev"`
	}
	p, game, _ := startProcess(t, cfg)
	c := dialGame(t, game)
	const n = 100
	revs := make([]float64, n)
	for i := range revs {
		var r put
		call(t, c, 1, map[string]any{"key": fmt.Sprintf("k%03d", i), "value": map[string]any{"i": i, "pad": strings.Repeat("x", 200)}}, &r)
		revs[i] = r.Rev
	}
	// SIGKILL at once, after the last acknowledgement: no drain, no stop
	// hook, no flush by the store's Close.
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // the cleanup waits on it too
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("the gateway exited with %v, not by SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the killed gateway did not exit")
	}
	c.Close()

	_, game, _ = startProcess(t, cfg)
	c = dialGame(t, game)
	for i, want := range revs {
		var got struct {
			Value map[string]any `json:"value"`
			Rev   float64        `json:"rev"`
		}
		call(t, c, 2, map[string]string{"key": fmt.Sprintf("k%03d", i)}, &got)
		if got.Rev != want || got.Value["i"] != float64(i) {
			t.Fatalf("after kill -9, k%03d: %v at revision %v, want i=%d at revision %v", i, got.Value, got.Rev, i, want)
		}
	}
	var r put
	call(t, c, 1, map[string]any{"key": "after", "value": 1}, &r)
	if r.Rev <= revs[n-1] {
		t.Errorf("the first put after the restart got revision %v, not above %v", r.Rev, revs[n-1])
	}
}
