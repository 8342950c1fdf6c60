package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/shieldrpc/shield/internal/testutil"
)

// natsCluster is three nats-servers with JetStream, clustered over routes
// on loopback, in the test process (docs/cluster.md "A replicated NATS").
type natsCluster struct {
	t    *testing.T
	opts []*server.Options
	srvs []*server.Server
	urls []string
}

func startNATSCluster(t *testing.T) *natsCluster {
	t.Helper()
	const n = 3
	client, route := make([]int, n), make([]int, n)
	for i := range n {
		client[i], route[i] = freePort(t), freePort(t)
	}
	c := &natsCluster{t: t}
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", route[j]))
			}
		}
		opts := &server.Options{ServerName: fmt.Sprintf("nats-%d", i+1), Host: "127.0.0.1", Port: client[i],
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "shield-test", Host: "127.0.0.1", Port: route[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
			// A short lame-duck period: the test waits for it.
			LameDuckDuration: time.Second, LameDuckGracePeriod: 100 * time.Millisecond}
		c.opts = append(c.opts, opts)
		c.srvs = append(c.srvs, nil)
		c.urls = append(c.urls, fmt.Sprintf("nats://127.0.0.1:%d", client[i]))
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.srvs {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	// JetStream is usable once the servers have elected a meta leader.
	nc, err := nats.Connect(strings.Join(c.urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	within(t, 20*time.Second, "a JetStream meta leader", func() bool {
		_, err := js.AccountInfo()
		return err == nil
	})
	return c
}

// start starts server i (again: its store survives), and waits until it
// takes connections.
func (c *natsCluster) start(i int) {
	c.t.Helper()
	srv, err := server.NewServer(c.opts[i])
	if err != nil {
		c.t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		c.t.Fatal("a nats-server did not start")
	}
	c.srvs[i] = srv
}

// streamLeader is the server leading bucket's stream.
func (c *natsCluster) streamLeader(bucket string) int {
	for i, s := range c.srvs {
		if s.Running() && s.JetStreamIsStreamLeader("$G", "KV_"+bucket) {
			return i
		}
	}
	return -1
}

// TestReplicatedNATS (SPEC §10, §11): gateway A and service node S on a
// 3-server NATS cluster (cluster.nats lists all three), the players bucket
// kept by all three (storage.replicas: 3). Under kv writes, one server
// enters lame-duck mode and leaves, then the bucket's stream leader is
// killed: requests go on (each answered exactly once: ok, or unavailable
// or timeout while a connection moves), and every write that was
// acknowledged is read back afterwards.
func TestReplicatedNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("three clustered nats-servers")
	}
	testutil.CheckGoroutines(t)
	nc := startNATSCluster(t)
	top := "storage: {replicas: 3, buckets: [{name: players}]}\n"
	urls := `nats: "` + strings.Join(nc.urls, ", ") + `"`
	// front's sessions never log in: auth_timeout must outlast the test.
	a := startNode(t, nodeSpec{name: "gw-a", services: "[auth, calc]", gateway: true, top: top, cluster: urls,
		session: "auth_timeout: 300s"})
	s := startNode(t, nodeSpec{name: "svc", services: "[player, room, front]", top: top, cluster: urls})
	waitReady(t, a, s)

	c := dial(t, a, "front")
	acked := map[string]int{}
	outcomes := map[string]int{}
	write := func(i int) {
		key := "k" + strconv.Itoa(i)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var r struct {
			Sum int `json:"sum"`
		}
		err := c.Call(ctx, routeTrace, map[string]any{"key": key, "a": i, "b": 0}, &r)
		switch {
		case err == nil && r.Sum == i:
			acked[key] = i
			outcomes["ok"]++
		case err == nil:
			t.Fatalf("write %d answered %d", i, r.Sum)
		default:
			k := string(codeOf(err))
			if k == "" {
				k = err.Error()
			}
			if outcomes[k] == 0 {
				t.Logf("write %d: %v", i, err)
			}
			outcomes[k]++
		}
	}
	i := 0
	burst := func(n int) {
		for range n {
			write(i)
			i++
		}
	}
	burst(50)
	// The server gateway A is connected to leaves gracefully: its clients
	// are asked to move first (lame-duck mode).
	lame := -1
	for j, u := range nc.urls {
		if u == a.Srv.Cluster.Conn().ConnectedUrl() {
			lame = j
		}
	}
	if lame < 0 {
		t.Fatalf("gateway A is connected to %q, none of %v", a.Srv.Cluster.Conn().ConnectedUrl(), nc.urls)
	}
	go nc.srvs[lame].LameDuckShutdown()
	burst(100)
	within(t, 10*time.Second, "the lame-duck server gone", func() bool { return !nc.srvs[lame].Running() })
	burst(50)
	// It comes back (a rolling restart), and catches up before the next
	// fault: an R3 stream needs two of its three servers.
	nc.srvs[lame].WaitForShutdown()
	nc.start(lame)
	within(t, 20*time.Second, "the restarted server current", func() bool { return nc.srvs[lame].JetStreamIsCurrent() })
	burst(50)
	// The bucket's leader dies.
	leader := nc.streamLeader("players")
	if leader < 0 {
		t.Fatal("no stream leader for KV_players")
	}
	nc.srvs[leader].Shutdown()
	nc.srvs[leader].WaitForShutdown()
	killed := time.Now()
	var back time.Duration
	for back == 0 && time.Since(killed) < 30*time.Second {
		before := outcomes["ok"]
		write(i)
		i++
		if outcomes["ok"] > before {
			back = time.Since(killed)
		}
	}
	burst(50)
	t.Logf("writes: %v; acknowledged %d; first write acknowledged %v after the leader's kill", outcomes, len(acked), back.Round(time.Millisecond))
	if back == 0 {
		t.Fatal("no write acknowledged after the stream leader was killed")
	}
	for k, code := range outcomes {
		if k != "ok" && k != "client_rpc.unavailable" && k != "client_rpc.timeout" {
			t.Errorf("%d writes ended %q", code, k)
		}
	}
	// Every acknowledged write is there, on what is left of the cluster.
	lost := 0
	for key, v := range acked {
		var got *struct {
			A int `json:"a"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Call(ctx, routeKVGet, map[string]string{"key": key}, &got)
		cancel()
		if err != nil || got == nil || got.A != v {
			lost++
			if lost < 5 {
				t.Errorf("acknowledged write %s = %d: read back %+v, %v", key, v, got, err)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged writes lost", lost, len(acked))
	}
	for _, n := range []*node{a, s} {
		ev := n.Srv.Metrics.EnableCluster().NATSEvents
		t.Logf("%s: NATS events disconnected %v reconnected %v lame_duck %v", n.name,
			readGauge(ev.WithLabelValues("disconnected")), readGauge(ev.WithLabelValues("reconnected")), readGauge(ev.WithLabelValues("lame_duck")))
	}
	if ev := a.Srv.Metrics.EnableCluster().NATSEvents; readGauge(ev.WithLabelValues("lame_duck")) < 1 ||
		readGauge(ev.WithLabelValues("reconnected")) < 1 {
		t.Error("gateway A counted no lame_duck event, or no reconnection, when its server left")
	}
}
