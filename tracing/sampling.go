package tracing

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	otelcodes "go.opentelemetry.io/otel/codes"
)

// sampler is docs/tracing.md's sampling: parent-based, a new trace by
// ratio; but a span it does not sample is still recorded (never dropped),
// so that errorsAlways can export it should it end in an error.
type sampler struct{ ratio sdktrace.Sampler }

func (s sampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	psc := trace.SpanContextFromContext(p.ParentContext)
	if psc.IsValid() {
		d := sdktrace.RecordOnly
		if psc.IsSampled() {
			d = sdktrace.RecordAndSample
		}
		return sdktrace.SamplingResult{Decision: d, Tracestate: psc.TraceState()}
	}
	r := s.ratio.ShouldSample(p)
	if r.Decision == sdktrace.Drop {
		r.Decision = sdktrace.RecordOnly
	}
	return r
}

func (s sampler) Description() string {
	return "ShieldSampler{" + s.ratio.Description() + ", errors always}"
}

// errorsAlways passes sampled spans to next, the batch exporter, and an
// unsampled one only when it ended in an error, shown to next as sampled
// (the batch processor exports sampled spans only).
type errorsAlways struct{ next sdktrace.SpanProcessor }

func (e errorsAlways) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { e.next.OnStart(ctx, s) }

func (e errorsAlways) OnEnd(s sdktrace.ReadOnlySpan) {
	switch {
	case s.SpanContext().IsSampled():
		e.next.OnEnd(s)
	case s.Status().Code == otelcodes.Error:
		e.next.OnEnd(sampledView{s})
	}
}

func (e errorsAlways) Shutdown(ctx context.Context) error   { return e.next.Shutdown(ctx) }
func (e errorsAlways) ForceFlush(ctx context.Context) error { return e.next.ForceFlush(ctx) }

// sampledView is an unsampled span that ended in an error, seen as sampled.
type sampledView struct{ sdktrace.ReadOnlySpan }

func (v sampledView) SpanContext() trace.SpanContext {
	sc := v.ReadOnlySpan.SpanContext()
	return sc.WithTraceFlags(sc.TraceFlags().WithSampled(true))
}
