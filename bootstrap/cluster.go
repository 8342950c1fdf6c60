package bootstrap

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/shieldrpc/shield/cluster"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/gateway"
	"github.com/shieldrpc/shield/kv"
	"github.com/shieldrpc/shield/metrics"
)

// The cluster half of the wiring (SPEC §10). With a cluster key the node
// joins the cluster before any VM's init runs (a refusal fails the start
// with no side effect), the gateway sends through the node, which
// delivers to this node's instances directly and to the others over NATS,
// and the services answer and push through it. Without one, none of this
// runs: the gateway and the runtime are wired to each other directly.

// joinCluster joins the cluster of rep's config, or returns nil without
// one. The runtime's calls to instances hosted elsewhere go through the
// node from now on.
func joinCluster(ctx context.Context, rep *Report, m *metrics.Metrics, log *slog.Logger, opts Options) (*cluster.Node, error) {
	if rep.Config.Cluster == nil {
		return nil, nil
	}
	co := cluster.Options{Config: rep.Config, Table: rep.Table, Runtime: rep.Runtime,
		Metrics: m, Logger: log, OnFatal: opts.OnFatal}
	if st := rep.Config.Storage; st != nil && rep.Config.Cluster.Embedded != "" {
		// The node's own NATS server keeps the kv buckets, in storage.data_dir.
		co.Embedded = func(o *server.Options) { kv.ServerOptions(o, *st) }
	}
	node, err := cluster.New(ctx, co)
	if err != nil {
		return nil, err
	}
	rep.Runtime.SetRemote(node)
	if rep.KV != nil {
		// shield.kv on the cluster's NATS, over the node's one connection
		// (SPEC §11); the store starts with the runtime, after this.
		rep.KV.UseConn(node.Conn())
	}
	return node, nil
}

// services is what the gateway sends through: the node in a cluster, the
// runtime itself in one process.
func services(node *cluster.Node, rep *Report) gateway.Services {
	if node == nil {
		return rep.Runtime
	}
	return node
}

// sink is what the services send through: the node in a cluster (which
// reaches this node's gateway directly, if it is one), the gateway in one
// process.
func sink(node *cluster.Node, gw *gateway.Gateway, listeners int) egress.Sink {
	if node == nil {
		return gw
	}
	if listeners > 0 {
		node.AttachGateway(gw)
	}
	return node
}

// leaveCluster ends a node's drain in the cluster (SPEC §10): once no run
// is in flight in its VMs (its sessions have gone already), or at ctx's
// end, it tells the others it is gone.
func (s *Server) leaveCluster(ctx context.Context) {
	if s.Cluster == nil {
		return
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.Runtime.Busy() > 0 {
		select {
		case <-ctx.Done():
			s.Cluster.Leave()
			return
		case <-tick.C:
		}
	}
	s.Cluster.Leave()
}

// closeCluster closes the node's NATS connection (and its embedded
// server), after the VMs stopped.
func (s *Server) closeCluster() {
	if s.Cluster != nil {
		s.Cluster.Close()
	}
}
