package service_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/metrics"
)

// These tests run real scripts in real VMs under the real runtime; the only
// fake is the gateway, which records what the services send it. The world,
// the recording gateway and the YAML builders are luatest's, shared with
// package luavm; counting VM restarts is this package's own.

// world is a luatest world whose runtime reports its metrics to a
// metric set of its own.
type world struct {
	*luatest.World
	metrics *counter
}

// counter reads the VM restarts of a world's metrics by service.
type counter struct{ m *metrics.Metrics }

func (c *counter) get(service string) int {
	return int(testutil.ToFloat64(c.m.VMRestarts.WithLabelValues(service)))
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
	m := metrics.New()
	w, err := luatest.TryWorld(t, files, luatest.Options{Metrics: m})
	return &world{World: w, metrics: &counter{m}}, err
}
