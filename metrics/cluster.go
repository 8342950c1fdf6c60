package metrics

import "github.com/prometheus/client_golang/prometheus"

// Cluster holds the metrics of SPEC §10, registered only when the node is
// in a cluster (EnableCluster): one process exports none of them.
type Cluster struct {
	Nodes    prometheus.Gauge       // shield_cluster_nodes: live nodes, this one included
	Messages *prometheus.CounterVec // shield_cluster_messages_total{kind,dir}
	NodeLost prometheus.Counter     // shield_cluster_node_lost_total: deaths, not graceful leaves
	// NATSConnected is shield_cluster_nats_connected: 1 while the node's
	// NATS connection is up, 0 while it is down (reconnecting).
	NATSConnected prometheus.Gauge
	// NATSEvents is shield_cluster_nats_events_total{event}: the NATS
	// connection's disconnected, reconnected and lame_duck (its server
	// is shutting down gracefully and asks clients to move) events.
	NATSEvents *prometheus.CounterVec

	// counters caches Messages by kind and direction: every message
	// crossing nodes counts once, and a label lookup per message would
	// cost more than the count.
	counters [numKinds][2]prometheus.Counter
}

// MessageKind is the kind label of shield_cluster_messages_total.
type MessageKind int

// The kinds of SPEC §10: ingress (client frames), answer (their answers),
// push, call (calls and sends), reply (call results), control (bind, kick,
// Disconnected and the other session messages, and their replies),
// presence (announcements and heartbeats).
const (
	KindIngress MessageKind = iota
	KindAnswer
	KindPush
	KindCall
	KindReply
	KindControl
	KindPresence
	numKinds
)

var kindNames = [numKinds]string{"ingress", "answer", "push", "call", "reply", "control", "presence"}

// EnableCluster registers the cluster metrics on m's registry, once, and
// returns them.
func (m *Metrics) EnableCluster() *Cluster {
	m.clusterOnce.Do(func() {
		c := &Cluster{
			Nodes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "shield_cluster_nodes",
				Help: "Live nodes of the cluster, this one included (SPEC §10)."}),
			Messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_cluster_messages_total",
				Help: "Messages between nodes, by kind (ingress, answer, push, call, reply, control, presence) and dir (in, out)."},
				[]string{"kind", "dir"}),
			NodeLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "shield_cluster_node_lost_total",
				Help: "Nodes declared dead after node_timeout without a heartbeat (a graceful leave is not counted)."}),
			NATSConnected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "shield_cluster_nats_connected",
				Help: "1 while this node's NATS connection is up, 0 while it is down and reconnecting (SPEC §10)."}),
			NATSEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_cluster_nats_events_total",
				Help: "Events of this node's NATS connection: disconnected, reconnected, lame_duck (its server asked clients to move before it shuts down)."},
				[]string{"event"}),
		}
		for k := range numKinds {
			c.counters[k][0] = c.Messages.WithLabelValues(kindNames[k], "in")
			c.counters[k][1] = c.Messages.WithLabelValues(kindNames[k], "out")
		}
		for _, e := range []string{"disconnected", "reconnected", "lame_duck"} {
			c.NATSEvents.WithLabelValues(e) // every event's series from the start, 0 until it happens
		}
		m.Registry.MustRegister(c.Nodes, c.Messages, c.NodeLost, c.NATSConnected, c.NATSEvents)
		m.cluster = c
	})
	return m.cluster
}

// In counts one message received.
func (c *Cluster) In(k MessageKind) { c.counters[k][0].Inc() }

// Out counts one message sent.
func (c *Cluster) Out(k MessageKind) { c.counters[k][1].Inc() }
