package config

import (
	"net/url"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Tracing is the tracing block (docs/tracing.md): OpenTelemetry traces
// exported over OTLP/HTTP, off by default. The standard OTEL_* variables
// fill what it leaves empty.
type Tracing struct {
	Enabled     bool
	Endpoint    string  // an http(s) URL; empty: OTEL_EXPORTER_OTLP_*
	SampleRatio float64 // 0..1, the share of new traces sampled
	ServiceName string  // empty: OTEL_SERVICE_NAME, else "shield"
}

// DefaultSampleRatio is tracing.sample_ratio's default.
const DefaultSampleRatio = 0.1

func (d *decoder) tracing(n *yaml.Node, t *Tracing) {
	w := where{}
	d.mapping(n, w, "tracing", fields{
		"enabled":      d.boolean(&t.Enabled, w, "tracing.enabled"),
		"endpoint":     d.httpURL(&t.Endpoint, w, "tracing.endpoint"),
		"sample_ratio": d.ratio(&t.SampleRatio, w, "tracing.sample_ratio"),
		"service_name": d.nonEmpty(&t.ServiceName, w, "tracing.service_name"),
	})
}

// httpURL decodes an absolute http or https URL.
func (d *decoder) httpURL(dst *string, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		var v string
		d.nonEmpty(&v, w, key)(n)
		if v == "" {
			return
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.errorf(n.Line, w, "%s: %q is not an http(s) URL such as \"http://127.0.0.1:4318/v1/traces\"", key, short(v))
			return
		}
		*dst = v
	}
}

// ratio decodes a number in [0, 1]; an integer 0 or 1 is one too.
func (d *decoder) ratio(dst *float64, w where, key string) func(*yaml.Node) {
	return func(n *yaml.Node) {
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
			d.errorf(n.Line, w, "%s: must be a number from 0 to 1, got %s", key, describe(n))
			return
		}
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || !(v >= 0 && v <= 1) {
			d.errorf(n.Line, w, "%s: %s is out of range [0, 1]", key, short(n.Value))
			return
		}
		*dst = v
	}
}
