package metrics

import "github.com/prometheus/client_golang/prometheus"

// KV holds shield.kv's metrics (SPEC §11), registered only when the
// config has storage (EnableKV).
type KV struct {
	// Ops is shield_kv_op_seconds{bucket,op}: how long each store
	// operation took, from the store's call to JetStream's answer (or
	// its failure).
	Ops *prometheus.HistogramVec
}

// EnableKV registers the kv metrics on m's registry, once, and returns
// them.
func (m *Metrics) EnableKV() *KV {
	m.kvOnce.Do(func() {
		k := &KV{Ops: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shield_kv_op_seconds",
			Help:    "shield.kv operations by bucket and op (get, put, create, update, delete, keys): the time from the call to JetStream's answer.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}},
			[]string{"bucket", "op"})}
		m.Registry.MustRegister(k.Ops)
		m.kv = k
	})
	return m.kv
}
