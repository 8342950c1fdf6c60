package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/shieldrpc/shield/tracing"
	"github.com/shieldrpc/shield/tracing/otlptest"
)

func newTracer(t *testing.T, r *otlptest.Receiver, ratio float64) *tracing.Tracer {
	t.Helper()
	tr, err := tracing.New(context.Background(), tracing.Options{Endpoint: r.URL, SampleRatio: ratio, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

func flush(t *testing.T, tr *tracing.Tracer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSampling is docs/tracing.md "Sampling": parent-based, a ratio for
// new traces, and every span that ends in an error exported whatever the
// sampling said.
func TestSampling(t *testing.T) {
	sampledParent, _ := tracing.ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	unsampledParent, _ := tracing.ParseTraceParent("00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	cases := []struct {
		name    string
		ratio   float64
		parent  tracing.Context
		outcome string
		export  bool
	}{
		{"ratio 1, new trace", 1, tracing.Context{}, "ok", true},
		{"ratio 0, new trace", 0, tracing.Context{}, "ok", false},
		{"ratio 0, an error", 0, tracing.Context{}, "client_rpc.timeout", true},
		{"ratio 0, a sampled parent", 0, sampledParent, "ok", true},
		{"ratio 1, an unsampled parent", 1, unsampledParent, "ok", false},
		{"ratio 1, an unsampled parent, an error", 1, unsampledParent, "client_rpc.busy", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := otlptest.New(t)
			tr := newTracer(t, r, c.ratio)
			now := time.Now()
			s := tr.Start(c.parent, "shield.request x", tracing.Server, now, tracing.String("shield.route", "x"))
			if !s.Active() {
				t.Fatal("a started span is not active")
			}
			s.End(c.outcome, now.Add(time.Millisecond))
			flush(t, tr)
			got := r.Spans()
			if !c.export {
				if len(got) != 0 {
					t.Fatalf("exported %d spans, want none", len(got))
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("exported %d spans, want 1", len(got))
			}
			sp := got[0]
			if sp.Attrs["shield.outcome"] != c.outcome || sp.Error != (c.outcome != "ok") {
				t.Fatalf("outcome %q error %v", sp.Attrs["shield.outcome"], sp.Error)
			}
			if c.parent.Valid() && (sp.TraceID != c.parent.TraceIDString() || sp.ParentID != c.parent.SpanIDString()) {
				t.Fatalf("parent: trace %s parent %s", sp.TraceID, sp.ParentID)
			}
			if sp.Resource["shield.node"] != "n1" || sp.Resource["service.name"] != "shield" || sp.Kind != "server" {
				t.Fatalf("resource %v kind %s", sp.Resource, sp.Kind)
			}
		})
	}
}

// TestChild: a child shares its parent's trace; the zero Context has no
// children; a nil Tracer is tracing off.
func TestChild(t *testing.T) {
	r := otlptest.New(t)
	tr := newTracer(t, r, 1)
	now := time.Now()
	root := tr.Start(tracing.Context{}, "root", tracing.Server, now)
	child := tr.Child(root.Context(), "child", tracing.Internal, now)
	if tr.Child(tracing.Context{}, "orphan", tracing.Internal, now).Active() {
		t.Fatal("a child of the zero Context is active")
	}
	child.End("", now)
	root.End("ok", now)
	flush(t, tr)
	spans := r.Spans()
	c, p := otlptest.Named(spans, "child"), otlptest.Named(spans, "root")
	if len(c) != 1 || len(p) != 1 || c[0].ParentID != p[0].SpanID || c[0].TraceID != p[0].TraceID {
		t.Fatalf("spans %+v", spans)
	}

	var off *tracing.Tracer
	s := off.Start(tracing.Context{}, "x", tracing.Server, now)
	if s.Active() || s.Context().Valid() {
		t.Fatal("a nil Tracer started a span")
	}
	s.Set(tracing.String("k", "v"))
	s.End("x", now)
	if err := off.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSDKDisabled(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "true")
	tr, err := tracing.New(context.Background(), tracing.Options{Endpoint: "http://127.0.0.1:1/v1/traces", SampleRatio: 1})
	if err != nil || tr != nil {
		t.Fatalf("New = %v, %v; want nil, nil", tr, err)
	}
}

func TestUint(t *testing.T) {
	if a := tracing.Uint("k", 1<<63); a.Value.AsString() != "9223372036854775808" {
		t.Fatalf("Uint past int64: %v", a.Value.Emit())
	}
	if a := tracing.Uint("k", 7); a.Value.AsInt64() != 7 {
		t.Fatalf("Uint 7: %v", a.Value.Emit())
	}
}
