package cluster_test

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func readGauge(g prometheus.Collector) float64 { return testutil.ToFloat64(g) }
