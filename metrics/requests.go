package metrics

import (
	"math"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shieldrpc/shield/internal/cowmap"
)

// shield_requests_total and shield_handler_seconds are counted for every
// answer, by every actor at once. client_golang's histogram takes three
// atomic writes on one series per observation; two actors answering on the
// same route kept those cache lines moving between cores, at about 140 ns
// an answer (BenchmarkClientGolangHistogram, 2 CPUs). So the answers of one batch
// (an actor step's, Gateway.RespondAll) are added up in a Tally first and
// added to the series once per label set; the histogram is this file's
// own collector, whose series take whole batches.

// handlerBuckets are shield_handler_seconds' upper bounds (SPEC §9).
var handlerBuckets = [...]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15}

// nBuckets counts the buckets with +Inf.
const nBuckets = len(handlerBuckets) + 1

// bucketOf is the index of the bucket that s seconds fall in.
func bucketOf(s float64) int {
	return sort.SearchFloat64s(handlerBuckets[:], s) // the first bound >= s: le is inclusive
}

// handlerHistogram is shield_handler_seconds{service,route}.
type handlerHistogram struct {
	desc   *prometheus.Desc
	series cowmap.Map[seriesKey, *histSeries]
}

type seriesKey struct{ service, route string }

// histSeries is one series: a count per bucket (not cumulative; the
// count is their sum, so that a scrape never shows a count that its +Inf
// bucket does not) and the sum of the observations. A scrape while a
// batch is being added may see its sum and not its counts, or the
// reverse; at rest both are exact.
type histSeries struct {
	buckets [nBuckets]atomic.Uint64
	sumBits atomic.Uint64 // a float64
	created time.Time     // exposed as client_golang's histograms expose theirs
}

func newHandlerHistogram() *handlerHistogram {
	return &handlerHistogram{desc: prometheus.NewDesc("shield_handler_seconds",
		"Time from delivery to a service until the answer, by service and route.", []string{"service", "route"}, nil)}
}

// of returns the series of k, making it when it is new.
func (h *handlerHistogram) of(k seriesKey) *histSeries {
	return h.series.LoadOrMake(k, func() *histSeries { return &histSeries{created: time.Now()} })
}

// add adds an entry's observations to its series.
func (s *histSeries) add(e *tallyEntry) {
	for i, n := range e.buckets {
		if n != 0 {
			s.buckets[i].Add(uint64(n))
		}
	}
	for {
		old := s.sumBits.Load()
		if s.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+e.sum)) {
			return
		}
	}
}

// Describe and Collect make handlerHistogram a prometheus.Collector.
func (h *handlerHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

func (h *handlerHistogram) Collect(ch chan<- prometheus.Metric) {
	for k, s := range h.series.All() {
		cum := make(map[float64]uint64, len(handlerBuckets))
		var count uint64
		for i := range s.buckets {
			count += s.buckets[i].Load()
			if i < len(handlerBuckets) {
				cum[handlerBuckets[i]] = count
			}
		}
		sum := math.Float64frombits(s.sumBits.Load())
		ch <- prometheus.MustNewConstHistogramWithCreatedTimestamp(h.desc, count, sum, cum, s.created, k.service, k.route)
	}
}

// Tally adds up answered requests for Flush. The zero value is ready;
// a Tally is one goroutine's.
type Tally struct {
	n int
	e [4]tallyEntry // a batch's answers have a few label sets, mostly one
}

type tallyEntry struct {
	key     requestKey
	count   uint64
	sum     float64
	buckets [nBuckets]uint32
}

// Add tallies one answered request on m: its service, route label, code
// (ok or the error code), and handler time. A fifth label set flushes the
// four before it.
func (t *Tally) Add(m *Metrics, service, route, code string, d time.Duration) {
	var e *tallyEntry
	for i := range t.n {
		if k := &t.e[i].key; k.service == service && k.route == route && k.code == code {
			e = &t.e[i]
			break
		}
	}
	if e == nil {
		if t.n == len(t.e) {
			t.Flush(m)
		}
		e = &t.e[t.n]
		t.n++
		*e = tallyEntry{key: requestKey{service, route, code}}
	}
	s := d.Seconds()
	e.count++
	e.sum += s
	e.buckets[bucketOf(s)]++
}

// Flush adds what was tallied to m's series and empties t.
func (t *Tally) Flush(m *Metrics) {
	for i := range t.n {
		e := &t.e[i]
		rm := m.requestMetrics(e.key)
		rm.count.Add(float64(e.count))
		rm.seconds.add(e)
	}
	t.n = 0
}

// requestMetrics returns k's series. The label lookups are cached: the
// label sets are bounded (services and routes from the descriptor, codes
// from a closed set).
func (m *Metrics) requestMetrics(k requestKey) requestMetrics {
	return m.reqCache.LoadOrMake(k, func() requestMetrics {
		return requestMetrics{m.Requests.WithLabelValues(k.service, k.route, k.code), m.handlerSeconds.of(seriesKey{k.service, k.route})}
	})
}

type requestKey struct{ service, route, code string }

type requestMetrics struct {
	count   prometheus.Counter
	seconds *histSeries
}
