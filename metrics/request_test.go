package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
)

// TestRequestsAsClientGolang checks that shield_requests_total and
// shield_handler_seconds, counted in tallies, read exactly as client_golang's
// own counter and histogram would after the same answers: every bucket
// bound (each on its edge too), the sum, the count, label sets a tally
// flushes early, and tallies of one answer.
func TestRequestsAsClientGolang(t *testing.T) {
	m := New()
	ref := prometheus.NewRegistry()
	refCount := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shield_requests_total",
		Help: "Answered client requests, by service, route and code (ok or the error code)."}, []string{"service", "route", "code"})
	refHist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shield_handler_seconds",
		Help:    "Time from delivery to a service until the answer, by service and route.",
		Buckets: handlerBuckets[:]}, []string{"service", "route"})
	ref.MustRegister(refCount, refHist)

	var ds []time.Duration
	for _, b := range handlerBuckets {
		s := time.Duration(b * float64(time.Second))
		ds = append(ds, s-time.Microsecond/2, s, s+time.Microsecond/2)
	}
	ds = append(ds, 0, 20*time.Second)
	labels := [][3]string{{"echo", "raw", "ok"}, {"echo", "raw", "client_rpc.timeout"}, {"echo", "json", "ok"},
		{"hall", "raw", "ok"}, {"lobby", "login", "ok"}, {"lobby", "7", "ok"}}
	var tally Tally
	for i, d := range ds {
		l := labels[i%len(labels)]
		if i%7 == 3 {
			var one Tally
			one.Add(m, l[0], l[1], l[2], d)
			one.Flush(m)
		} else {
			tally.Add(m, l[0], l[1], l[2], d)
		}
		if i%11 == 10 {
			tally.Flush(m)
		}
		refCount.WithLabelValues(l[0], l[1], l[2]).Inc()
		refHist.WithLabelValues(l[0], l[1]).Observe(d.Seconds())
	}
	tally.Flush(m)

	gotAll, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	wantAll, err := ref.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, want := named(gotAll, "shield_requests_total", "shield_handler_seconds"), wantAll
	if len(got) != len(want) {
		t.Fatalf("%d metric families, want %d", len(got), len(want))
	}
	for i := range got {
		// Each series has the time it was made: only those differ.
		for _, m := range got[i].GetMetric() {
			if h := m.GetHistogram(); h != nil {
				if h.CreatedTimestamp == nil {
					t.Fatalf("%v: no created timestamp", m)
				}
				h.CreatedTimestamp = nil
			}
			if c := m.GetCounter(); c != nil {
				c.CreatedTimestamp = nil
			}
		}
		for _, m := range want[i].GetMetric() {
			if h := m.GetHistogram(); h != nil {
				h.CreatedTimestamp = nil
			}
			if c := m.GetCounter(); c != nil {
				c.CreatedTimestamp = nil
			}
		}
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("metric family differs\n got: %v\nwant: %v", got[i], want[i])
		}
	}
}

// named is the metric families of mfs with one of names, in order.
func named[T interface{ GetName() string }](mfs []T, names ...string) []T {
	var out []T
	for _, mf := range mfs {
		for _, n := range names {
			if mf.GetName() == n {
				out = append(out, mf)
			}
		}
	}
	return out
}

// BenchmarkRequest is the cost of one answer's metrics counted alone (a
// tally of one), by two goroutines on one series at once (the actors of a
// service).
func BenchmarkRequest(b *testing.B) {
	m := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var t Tally
			t.Add(m, "echo", "raw_echo", "ok", time.Millisecond)
			t.Flush(m)
		}
	})
}

// BenchmarkTally is the same, per answer, for answers tallied in batches
// of 16 (an actor step's, Gateway.RespondAll).
func BenchmarkTally(b *testing.B) {
	m := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var t Tally
		n := 0
		for pb.Next() {
			t.Add(m, "echo", "raw_echo", "ok", time.Millisecond)
			if n++; n%16 == 0 {
				t.Flush(m)
			}
		}
		t.Flush(m)
	})
}

// BenchmarkClientGolangHistogram is client_golang's histogram observed by
// two goroutines on one series: what each answer cost before tallies.
func BenchmarkClientGolangHistogram(b *testing.B) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Buckets: handlerBuckets[:]})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Observe(0.001)
		}
	})
}
