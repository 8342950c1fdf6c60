package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure New: the tracing block of the config, and the node.
type Options struct {
	// Endpoint is the OTLP/HTTP traces URL; empty: the OTEL_* variables.
	Endpoint string
	// SampleRatio is the share of new traces sampled, 0..1.
	SampleRatio float64
	// ServiceName is the resource's service.name; empty: OTEL_SERVICE_NAME,
	// else "shield".
	ServiceName string
	// Node is the config's node.name, the resource's shield.node.
	Node string
}

// Tracer starts Shield's spans. A nil *Tracer is tracing off: its Start
// returns the zero Span, whose methods do nothing, so a call site costs a
// nil test and nothing else.
type Tracer struct {
	tp   *sdktrace.TracerProvider
	t    trace.Tracer
	node attribute.KeyValue
}

// Disabled reports whether OTEL_SDK_DISABLED turns tracing off whatever
// the config says (the OpenTelemetry specification's variable).
func Disabled() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true")
}

// New starts a tracer exporting over OTLP/HTTP, or returns nil when
// OTEL_SDK_DISABLED says so. It connects lazily: an unreachable collector
// costs dropped spans, never a failed start.
func New(ctx context.Context, o Options) (*Tracer, error) {
	if Disabled() {
		return nil, nil
	}
	var opts []otlptracehttp.Option
	if o.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(o.Endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	name := o.ServiceName
	if name == "" {
		name = os.Getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = "shield"
	}
	res, err := resource.New(ctx, resource.WithFromEnv(),
		resource.WithAttributes(attribute.String("service.name", name), attribute.String("shield.node", o.Node)))
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	batch := sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBatchTimeout(time.Second),
		sdktrace.WithMaxExportBatchSize(512), sdktrace.WithMaxQueueSize(2048))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler{ratio: sdktrace.TraceIDRatioBased(o.SampleRatio)}),
		sdktrace.WithSpanProcessor(errorsAlways{batch}),
	)
	return &Tracer{tp: tp, t: tp.Tracer("github.com/shieldrpc/shield"), node: attribute.String("shield.node", o.Node)}, nil
}

// Shutdown exports the spans still held and stops the exporter, within
// ctx. Safe on nil.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// ForceFlush exports the spans ended so far, within ctx. Safe on nil.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Kind is a span's kind.
type Kind = trace.SpanKind

// The span kinds Shield uses.
const (
	Internal = trace.SpanKindInternal
	Server   = trace.SpanKindServer
	Client   = trace.SpanKindClient
	Producer = trace.SpanKindProducer
	Consumer = trace.SpanKindConsumer
)

// Attr is one attribute of a span.
type Attr = attribute.KeyValue

// String, Int and Uint are attributes.
func String(k, v string) Attr { return attribute.String(k, v) }

// Int is an integer attribute.
func Int(k string, v int) Attr { return attribute.Int(k, v) }

// Uint is an unsigned attribute, as a string when it passes int64's range
// (session ids are random 64-bit numbers).
func Uint(k string, v uint64) Attr {
	if v > 1<<63-1 {
		return attribute.String(k, fmt.Sprint(v))
	}
	return attribute.Int64(k, int64(v))
}

// Span is one span being recorded, or the zero Span (tracing off, or no
// parent where one is required), whose methods do nothing.
type Span struct{ s trace.Span }

// Start starts a span named name, a child of parent (a remote span: it
// came in a message), or of nothing when parent is the zero Context,
// starting at at. With a nil t it returns the zero Span.
func (t *Tracer) Start(parent Context, name string, kind Kind, at time.Time, attrs ...Attr) Span {
	if t == nil {
		return Span{}
	}
	ctx := context.Background()
	if parent.Valid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: parent.TraceID, SpanID: parent.SpanID, TraceFlags: trace.TraceFlags(parent.Flags), Remote: true,
		}))
	}
	_, s := t.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	return Span{s: s}
}

// Child starts a span under parent, if parent is a span; otherwise it
// returns the zero Span: what a span's child does when tracing is off or
// its parent was never traced.
func (t *Tracer) Child(parent Context, name string, kind Kind, at time.Time, attrs ...Attr) Span {
	if t == nil || !parent.Valid() {
		return Span{}
	}
	return t.Start(parent, name, kind, at, attrs...)
}

// Active reports whether s is a span (not the zero Span).
func (s Span) Active() bool { return s.s != nil }

// Context is s's identity, for the messages that carry it on; the zero
// Context for the zero Span.
func (s Span) Context() Context {
	if s.s == nil {
		return Context{}
	}
	sc := s.s.SpanContext()
	return Context{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags())}
}

// Set adds attributes.
func (s Span) Set(attrs ...Attr) {
	if s.s != nil {
		s.s.SetAttributes(attrs...)
	}
}

// End ends s at at with its outcome: "" or "ok" is ok, anything else a
// code of the contract, which makes the span an error (always exported,
// docs/tracing.md "Sampling").
func (s Span) End(outcome string, at time.Time) {
	if s.s == nil {
		return
	}
	if outcome == "" {
		outcome = "ok"
	}
	s.s.SetAttributes(attribute.String("shield.outcome", outcome))
	if outcome != "ok" {
		s.s.SetStatus(otelcodes.Error, outcome)
	}
	s.s.End(trace.WithTimestamp(at))
}

// Node is the shield.node attribute of this tracer's node.
func (t *Tracer) Node() Attr { return t.node }
