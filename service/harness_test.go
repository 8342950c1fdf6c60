package service_test

import (
	"sync"
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

// These tests run real scripts in real VMs under the real runtime; the only
// fake is the gateway, which records what the services send it. The world,
// the recording gateway and the YAML builders are luatest's, shared with
// package luavm; counting VM restarts is this package's own.

// world is a luatest world whose runtime reports its metrics to a counter.
type world struct {
	*luatest.World
	metrics *counter
}

// counter is a service.Metrics that counts VM restarts by service.
type counter struct {
	mu       sync.Mutex // guards restarts
	restarts map[string]int
}

func (c *counter) VMRestarted(service string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restarts[service]++
}

func (c *counter) get(service string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts[service]
}

// startWorld writes files (name -> content; "actors.yaml" is the config),
// compiles and starts them. At cleanup it stops the runtime and checks that
// no goroutine was left behind.
func startWorld(t testing.TB, files map[string]string) *world {
	t.Helper()
	w, err := tryWorld(t, files)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// tryWorld is startWorld returning Start's error instead of failing.
func tryWorld(t testing.TB, files map[string]string) (*world, error) {
	t.Helper()
	m := &counter{restarts: map[string]int{}}
	w, err := luatest.TryWorld(t, files, luatest.Options{Metrics: m})
	return &world{World: w, metrics: m}, err
}
