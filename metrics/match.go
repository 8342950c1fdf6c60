package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// matchVecs are the matchmaking metrics of docs/rooms.md §13, registered
// on the first Queue call: a node without queues exports none of them.
type matchVecs struct {
	waiting        *prometheus.GaugeVec
	tickets, found *prometheus.CounterVec
	wait           *prometheus.HistogramVec
}

// matchWaitBuckets are a ticket's wait from enqueue to matched, seconds.
var matchWaitBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

func newMatchVecs(r *prometheus.Registry) *matchVecs {
	v := &matchVecs{
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shield_match_tickets",
			Help: "Tickets waiting in a match queue on this node, by queue."}, []string{"queue"}),
		tickets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_match_tickets_total",
			Help: "Tickets ended, by queue and outcome (matched, cancelled, expired, unreachable)."}, []string{"queue", "outcome"}),
		found: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_matches_total",
			Help: "Matches formed, by queue and result (ok, create_failed)."}, []string{"queue", "result"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shield_match_wait_seconds",
			Help: "A matched ticket's wait from enqueue to its matched push, by queue.", Buckets: matchWaitBuckets}, []string{"queue"}),
	}
	r.MustRegister(v.waiting, v.tickets, v.found, v.wait)
	return v
}

// Queue counts one match queue's events (docs/rooms.md §13); it is the
// service.QueueMetrics of that queue.
type Queue struct {
	v       *matchVecs
	limits  *prometheus.CounterVec
	name    string
	waiting prometheus.Gauge
	wait    prometheus.Observer
}

// Queue returns the metrics of match queue name, registering the match
// metrics on the first call.
func (m *Metrics) Queue(name string) *Queue {
	m.matchOnce.Do(func() { m.match = newMatchVecs(m.Registry) })
	v := m.match
	return &Queue{v: v, limits: m.LimitsHit, name: name, waiting: v.waiting.WithLabelValues(name), wait: v.wait.WithLabelValues(name)}
}

// Waiting sets the queue's waiting tickets.
func (q *Queue) Waiting(n int) { q.waiting.Set(float64(n)) }

// Ended counts a ticket's end by outcome.
func (q *Queue) Ended(outcome string) { q.v.tickets.WithLabelValues(q.name, outcome).Inc() }

// Waited observes a matched ticket's wait.
func (q *Queue) Waited(d time.Duration) { q.wait.Observe(d.Seconds()) }

// Formed counts a match by result.
func (q *Queue) Formed(result string) { q.v.found.WithLabelValues(q.name, result).Inc() }

// Full counts an enqueue refused at max_tickets, as
// shield_limits_hit_total{limit="max_tickets"}.
func (q *Queue) Full() { q.limits.WithLabelValues("max_tickets").Inc() }
