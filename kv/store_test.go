package kv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/kv"
	"github.com/shieldrpc/shield/metrics"
)

// natsServer runs a NATS server on a free loopback port, as a cluster's
// would be, with JetStream on or off; it is shut down at cleanup.
func natsServer(t *testing.T, jetStream bool) *server.Server {
	t.Helper()
	return startNATS(t, &server.Options{JetStream: jetStream, StoreDir: t.TempDir()})
}

// startNATS runs a NATS server with opts on a free loopback port.
func startNATS(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.NoSigs, opts.NoLog = "127.0.0.1", -1, true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}

// dial connects to srv as a cluster would, closed at cleanup.
func dial(t *testing.T, srv *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func bg(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestGivenConn: given a connection (a cluster's), the store uses that
// NATS's JetStream, runs no server of its own, leaves the connection
// open at Close, and fails fast with unavailable while it is down.
func TestGivenConn(t *testing.T) {
	srv := natsServer(t, true)
	nc := dial(t, srv)
	s := kv.New(config.Storage{DataDir: t.TempDir() + "/unused", Buckets: []config.Bucket{{Name: "b", MaxValueBytes: 100}}}, kv.Options{Logger: quiet()})
	s.UseConn(nc)
	if err := s.Start(bg(t)); err != nil {
		t.Fatal(err)
	}
	rev, err := s.Put(bg(t), "b", "k", []byte(`1`))
	if err != nil || rev == 0 {
		t.Fatalf("put: %d %v", rev, err)
	}
	w := storeWorld(t, s, 5*time.Second, 1, `local M = {}
function M.r1(ctx, client, req) return { shield.kv.get("b", "k") } end
return M`)
	luatest.Expect(t, w.Ask(t, "a", 1, "{}"), `[1,1]`, "")

	srv.Shutdown()
	srv.WaitForShutdown()
	luatest.Wait(t, 5*time.Second, "the connection notices", func() bool { return nc.Status() != nats.CONNECTED })
	t0 := time.Now()
	luatest.Expect(t, w.Ask(t, "a", 1, "{}"), "client_rpc.unavailable", `^shield\.kv\.get: bucket b: the store's NATS connection is down$`)
	if d := time.Since(t0); d > time.Second {
		t.Errorf("unavailable took %v: it should not wait out the budget", d)
	}
	s.Close()
	if nc.IsClosed() {
		t.Error("Close closed the given connection")
	}
}

// TestClusterEmbedded: a server embedded by a cluster, with the store's
// ServerOptions applied, holds the buckets (their files in data_dir, their
// large values within max_payload) for a store given its connection.
func TestClusterEmbedded(t *testing.T) {
	cfg := config.Storage{DataDir: t.TempDir(), Buckets: []config.Bucket{{Name: "big", MaxValueBytes: 2 << 20}}}
	opts := &server.Options{}
	kv.ServerOptions(opts, cfg)
	nc := dial(t, startNATS(t, opts))
	s := kv.New(cfg, kv.Options{Conn: nc, Logger: quiet()})
	defer s.Close()
	if err := s.Start(bg(t)); err != nil {
		t.Fatal(err)
	}
	v := []byte(`"` + strings.Repeat("x", 2<<20-2) + `"`)
	if _, err := s.Put(bg(t), "big", "k", v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "jetstream")); err != nil {
		t.Errorf("the bucket's files are not in data_dir: %v", err)
	}
}

// TestStartRefusals: a NATS without JetStream, and a bucket whose values
// NATS cannot carry, fail the start with a message naming the bucket.
func TestStartRefusals(t *testing.T) {
	t.Run("no JetStream", func(t *testing.T) {
		nc := dial(t, natsServer(t, false))
		s := kv.New(config.Storage{Buckets: []config.Bucket{{Name: "players", MaxValueBytes: 100}}}, kv.Options{Conn: nc, Logger: quiet()})
		defer s.Close()
		err := s.Start(bg(t))
		if err == nil || !strings.Contains(err.Error(), `bucket "players"`) || !strings.Contains(err.Error(), "JetStream") {
			t.Fatalf("start: %v", err)
		}
	})
	t.Run("values over max_payload", func(t *testing.T) {
		nc := dial(t, natsServer(t, true)) // max_payload 1 MiB
		s := kv.New(config.Storage{Buckets: []config.Bucket{{Name: "huge", MaxValueBytes: 2 << 20}}}, kv.Options{Conn: nc, Logger: quiet()})
		defer s.Close()
		err := s.Start(bg(t))
		if err == nil || !strings.Contains(err.Error(), `bucket "huge"`) || !strings.Contains(err.Error(), "max_payload") {
			t.Fatalf("start: %v", err)
		}
	})
	t.Run("embedded raises its max_payload for large values", func(t *testing.T) {
		s := startStore(t, config.Bucket{Name: "big", MaxValueBytes: 3 << 20})
		v := make([]byte, 3<<20)
		for i := range v {
			v[i] = 'x'
		}
		v[0], v[len(v)-1] = '"', '"'
		if _, err := s.Put(bg(t), "big", "k", v); err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Get(bg(t), "big", "k")
		if err != nil || len(got) != len(v) {
			t.Fatalf("get: %d bytes, %v", len(got), err)
		}
	})
	t.Run("a data_dir that cannot be made", func(t *testing.T) {
		file := t.TempDir() + "/file"
		if err := writeFile(file); err != nil {
			t.Fatal(err)
		}
		s := kv.New(config.Storage{DataDir: file + "/sub", Buckets: []config.Bucket{{Name: "b", MaxValueBytes: 1}}}, kv.Options{Logger: quiet()})
		defer s.Close()
		if err := s.Start(bg(t)); err == nil || !strings.Contains(err.Error(), "storage.data_dir") {
			t.Fatalf("start: %v", err)
		}
	})
}

// TestStoreAPI: the Go side of the store, as a caller outside the VMs sees
// it (the VMs check keys and buckets before calling).
func TestStoreAPI(t *testing.T) {
	ctx := bg(t)
	unstarted := kv.New(config.Storage{Buckets: []config.Bucket{{Name: "b", MaxValueBytes: 1}}}, kv.Options{})
	if _, _, err := unstarted.Get(ctx, "b", "k"); !errors.Is(err, kv.ErrNotStarted) {
		t.Errorf("get before start: %v", err)
	}
	if n, ok := unstarted.MaxValueBytes("b"); n != 1 || !ok {
		t.Errorf("MaxValueBytes(b) = %d %v", n, ok)
	}
	if _, ok := unstarted.MaxValueBytes("c"); ok {
		t.Error("MaxValueBytes of an undeclared bucket")
	}
	unstarted.Close()

	s := startStore(t)
	if _, err := s.Put(ctx, "b", "a b", []byte("1")); err == nil {
		t.Error("put of a bad key")
	}
	if _, err := s.Put(ctx, "nosuch", "k", []byte("1")); err == nil {
		t.Error("put into an undeclared bucket")
	}
	for _, k := range []string{"x.1", "x.2", "x.10", "y", "x"} {
		if _, err := s.Put(ctx, "b", k, []byte("1")); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		prefix string
		limit  int
		want   string
	}{{"", 100, "x x.1 x.10 x.2 y"}, {"x.", 100, "x.1 x.10 x.2"}, {"x.1", 100, "x.1 x.10"}, {"", 2, "x x.1"}, {"z", 100, ""}} {
		keys, err := s.Keys(ctx, "b", c.prefix, c.limit)
		if got := strings.Join(keys, " "); err != nil || got != c.want {
			t.Errorf("Keys(%q, %d) = %q, %v; want %q", c.prefix, c.limit, got, err, c.want)
		}
	}
	if rev, err := s.Update(ctx, "b", "y", []byte("2"), 0); rev != 0 || err != nil {
		t.Errorf("update at revision 0: %d %v", rev, err)
	}
	s.Close()
	if _, err := s.Put(ctx, "b", "k", []byte("1")); !errors.Is(err, kv.ErrNotStarted) {
		t.Errorf("put after close: %v", err)
	}
}

func writeFile(path string) error { return os.WriteFile(path, []byte("x"), 0o644) }

// TestOpMetrics: every operation on a declared bucket is timed in
// shield_kv_op_seconds{bucket,op}; an undeclared bucket makes no series.
func TestOpMetrics(t *testing.T) {
	cfg := config.Storage{DataDir: t.TempDir(), Buckets: []config.Bucket{{Name: "players", MaxValueBytes: 100}}}
	opts := &server.Options{}
	kv.ServerOptions(opts, cfg)
	m := metrics.New()
	s := kv.New(cfg, kv.Options{Conn: dial(t, startNATS(t, opts)), Logger: quiet(), Metrics: m})
	defer s.Close()
	if err := s.Start(bg(t)); err != nil {
		t.Fatal(err)
	}
	rev, err := s.Put(bg(t), "players", "alice", []byte(`1`))
	if err != nil {
		t.Fatal(err)
	}
	_, _, _ = s.Get(bg(t), "players", "alice")
	_, _ = s.Create(bg(t), "players", "bob", []byte(`2`))
	_, _ = s.Update(bg(t), "players", "alice", []byte(`3`), rev)
	_ = s.Delete(bg(t), "players", "bob")
	_, _ = s.Keys(bg(t), "players", "", 10)
	_, _, _ = s.Get(bg(t), "nope", "x")
	ops := m.EnableKV().Ops
	for _, op := range []string{"get", "put", "create", "update", "delete", "keys"} {
		if n := histCount(t, ops.WithLabelValues("players", op)); n != 1 {
			t.Errorf("shield_kv_op_seconds{op=%q} counted %d, want 1", op, n)
		}
	}
	if n := promtestutil.CollectAndCount(ops); n != 6 {
		t.Errorf("%d series, want the 6 of bucket players", n)
	}
}

func histCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
