// Package metrics defines every Prometheus metric of SPEC §9 in one place,
// on a registry of its own so that tests and several gateways in one
// process never collide. Labels are bounded: reasons and codes from closed
// sets, routes and services from the descriptor, never client input.
package metrics

import (
	"regexp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/shieldrpc/shield/internal/cowmap"
)

// Metrics is the set of Shield's metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	Registry *prometheus.Registry

	Sessions         prometheus.Gauge
	EdgeDropped      *prometheus.CounterVec // reason
	ProtocolErrors   *prometheus.CounterVec // reason
	Requests         *prometheus.CounterVec // service, route, code
	handlerSeconds   *handlerHistogram      // service, route (requests.go)
	EgressRejected   *prometheus.CounterVec // reason
	SessionsClosed   *prometheus.CounterVec // reason
	SessionsRefused  prometheus.Counter
	VMRestarts       *prometheus.CounterVec // service
	AcceptErrors     prometheus.Counter
	LimitsHit        *prometheus.CounterVec // limit
	DroppedResponses prometheus.Counter

	SessionsSuspended  prometheus.Gauge
	SessionResumes     *prometheus.CounterVec // result: ok, failed
	IncidentsNotLogged *prometheus.CounterVec // service
	Reloads            *prometheus.CounterVec // result: ok, failed
	VMGenerations      *prometheus.GaugeVec   // service

	// reqCache is the request metrics' label cache (requests.go): the
	// actors of every service look it up at once.
	reqCache cowmap.Map[requestKey, requestMetrics]

	clusterOnce sync.Once
	cluster     *Cluster // nil until EnableCluster (cluster.go)
	kvOnce      sync.Once
	kv          *KV // nil until EnableKV (kv.go)
	roomOnce    sync.Once
	rooms       *roomVecs // nil until the first Room (rooms.go)
	matchOnce   sync.Once
	match       *matchVecs // nil until the first Queue (match.go)
}

// liveHeap adds go_gc_heap_live_bytes to the Go collector's metrics: the
// heap the last collection found live, which is what the heap watch
// compares with lua.heap_limit_bytes (go_memstats_heap_alloc_bytes also
// counts the garbage made since).
var liveHeap = collectors.WithGoCollectorRuntimeMetrics(
	collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})

// New creates the metrics on a fresh registry, with the Go runtime and
// process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		Sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "shield_sessions", Help: "Live client sessions."}),
		EdgeDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_edge_dropped_total",
			Help: "Client frames not delivered to a service, by reason (SPEC §5)."}, []string{"reason"}),
		ProtocolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_protocol_errors_total",
			Help: "Connections closed for an envelope violation, by reason (SPEC §3)."}, []string{"reason"}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_requests_total",
			Help: "Answered client requests, by service, route and code (ok or the error code)."}, []string{"service", "route", "code"}),
		handlerSeconds: newHandlerHistogram(),
		EgressRejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_egress_rejected_total",
			Help: "Pushes refused by the gateway's egress checks, by reason (SPEC §7)."}, []string{"reason"}),
		SessionsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_sessions_closed_total",
			Help: "Closed sessions, by Disconnected reason (SPEC §4)."}, []string{"reason"}),
		SessionsRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "shield_sessions_refused_total",
			Help: "Connections closed at accept because max_sessions was reached."}),
		VMRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_vm_restarts_total",
			Help: "VMs replaced after a Go panic, by service (the heap limit never replaces one)."}, []string{"service"}),
		AcceptErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "shield_accept_errors_total",
			Help: "Temporary accept errors (such as running out of file descriptors), each followed by a back-off."}),
		LimitsHit: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_limits_hit_total",
			Help: "Times a configured limit bit, by limit (max_sessions, max_inflight, mailbox, outbound_queue, rate_limit, max_frame_bytes, slow_consumer, handshake_timeout, heap_limit_bytes: the live Go heap passed lua.heap_limit_bytes, or grew a tenth of it further, and running handlers were stopped)."},
			[]string{"limit"}),
		DroppedResponses: prometheus.NewCounter(prometheus.CounterOpts{Name: "shield_dropped_responses_total",
			Help: "Answers dropped because their session was gone."}),
		SessionsSuspended: prometheus.NewGauge(prometheus.GaugeOpts{Name: "shield_sessions_suspended",
			Help: "Sessions waiting for a resume (SPEC §4)."}),
		SessionResumes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_session_resumes_total",
			Help: "Resume frames, by result (ok, failed)."}, []string{"result"}),
		IncidentsNotLogged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_incidents_not_logged_total",
			Help: "Handler incidents whose log line a VM's rate limit dropped, by service."}, []string{"service"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_reloads_total",
			Help: "Reloads (SIGHUP, POST /admin/reload), by result (ok, failed)."}, []string{"result"}),
		VMGenerations: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shield_vm_generation",
			Help: "The code version each service runs: 1 at start, one more per reload that replaced its VMs."}, []string{"service"}),
	}
	r.MustRegister(m.Sessions, m.EdgeDropped, m.ProtocolErrors, m.Requests, m.handlerSeconds, m.EgressRejected,
		m.SessionsClosed, m.SessionsRefused, m.VMRestarts, m.AcceptErrors, m.LimitsHit, m.DroppedResponses,
		m.SessionsSuspended, m.SessionResumes, m.IncidentsNotLogged, m.Reloads, m.VMGenerations,
		collectors.NewGoCollector(liveHeap), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchMailboxes exports shield_mailbox_depth{service}, read from depth at
// each scrape rather than updated per message.
func (m *Metrics) WatchMailboxes(services []string, depth func(service string) int) {
	for _, svc := range services {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "shield_mailbox_depth",
			Help:        "Messages waiting in a service's business lanes.",
			ConstLabels: prometheus.Labels{"service": svc},
		}, func() float64 { return float64(depth(svc)) }))
	}
}

// WatchControlLanes exports shield_control_depth{service}, read from depth
// at each scrape: the control lane is unbounded by design (its messages are
// never dropped), so its depth is watched instead.
func (m *Metrics) WatchControlLanes(services []string, depth func(service string) int) {
	for _, svc := range services {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "shield_control_depth",
			Help:        "Messages waiting in a service's control lanes (results, session lifecycle, hooks).",
			ConstLabels: prometheus.Labels{"service": svc},
		}, func() float64 { return float64(depth(svc)) }))
	}
}

// VMRestarted counts a replaced VM (service.Metrics).
func (m *Metrics) VMRestarted(service string) { m.VMRestarts.WithLabelValues(service).Inc() }

// VMGeneration sets shield_vm_generation{service} (service.Metrics).
func (m *Metrics) VMGeneration(service string, gen int) {
	m.VMGenerations.WithLabelValues(service).Set(float64(gen))
}

// HeapLimitHit counts the heap watch stopping runs (service.Metrics), as
// shield_limits_hit_total{limit="heap_limit_bytes"}.
func (m *Metrics) HeapLimitHit() { m.LimitsHit.WithLabelValues("heap_limit_bytes").Inc() }
