package acceptance

import (
	"context"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/envelope"
	"github.com/shieldrpc/shield/tracing/otlptest"
)

// tracedServer is the deadline services (deadline_test.go) exporting
// traces to a new receiver, with the given tracing block's other keys.
func tracedServer(t *testing.T, keys string) (*otlptest.Receiver, func(listener string, o client.Options) *client.Client) {
	t.Helper()
	r := otlptest.New(t)
	srv := deadlineServer(t, "tracing: {endpoint: \""+r.URL+"\", "+keys+"}")
	dial := func(listener string, o client.Options) *client.Client {
		t.Helper()
		o.Envelope = listener
		if listener == "ws" {
			o.Envelope, o.Transport = envelope.NameIdlen, "ws"
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		c, err := client.Dial(ctx, srv.Addr(listener), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return r, dial
}

// TestTraceParentEveryEnvelope (docs/protocol.md §12): a client's
// traceparent, alone or beside a declared deadline, reaches the gateway on
// every envelope and on ws, and the request's span is its child; a
// sampled flag is honoured at sample_ratio 0 (parent-based).
func TestTraceParentEveryEnvelope(t *testing.T) {
	r, dial := tracedServer(t, "enabled: true, sample_ratio: 0")
	ids := map[string]string{ // listener -> the trace id its client sends
		"idlen": "0af7651916cd43dd8448eb211c80319c", "typelen": "1af7651916cd43dd8448eb211c80319c",
		"lenprefix": "2af7651916cd43dd8448eb211c80319c", "delimiter": "3af7651916cd43dd8448eb211c80319c",
		"ws": "4af7651916cd43dd8448eb211c80319c",
	}
	const parent = "b7ad6b7169203331"
	for listener, id := range ids {
		c := dial(listener, client.Options{DeclareDeadlines: true})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var ms float64
		err := c.Call(client.WithTraceParent(ctx, "00-"+id+"-"+parent+"-01"), dLeft, nil, &ms)
		cancel()
		if err != nil || ms > 5000 || ms < 3000 {
			t.Errorf("%s: %v ms left, %v; want the declared 5 s", listener, ms, err)
		}
	}
	spans, ok := r.WaitFor(10*time.Second, func(sp []otlptest.Span) bool {
		return len(otlptest.Named(sp, "shield.request left")) == len(ids)
	})
	if !ok {
		t.Fatalf("request spans: %+v", otlptest.Named(spans, "shield.request left"))
	}
	for _, sp := range otlptest.Named(spans, "shield.request left") {
		found := false
		for _, id := range ids {
			found = found || sp.TraceID == id
		}
		if !found || sp.ParentID != parent {
			t.Errorf("a request span in trace %s under %s, not a client's", sp.TraceID, sp.ParentID)
		}
	}
}

// TestTraceRefusedAndInvalid: at sample_ratio 0 a frame the edge drops
// (an unknown route) is exported, error and verdict; an unsampled
// client's request is not; a traceparent that is not W3C's is ignored
// (the request is served, and its trace is the gateway's own).
func TestTraceRefusedAndInvalid(t *testing.T) {
	r, dial := tracedServer(t, "enabled: true, sample_ratio: 0")
	c := dial("idlen", client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := c.Call(ctx, 999, nil, nil); err == nil {
		t.Error("a call on an unknown route was answered")
	}
	cancel()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tp := range []string{
		"00-5af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", // not sampled
		"00-6AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", // upper case: not W3C's
	} {
		if err := c.Call(client.WithTraceParent(ctx, tp), dLeft, nil, nil); err != nil {
			t.Fatalf("traceparent %s: %v", tp, err)
		}
	}
	spans, ok := r.WaitFor(10*time.Second, func(sp []otlptest.Span) bool {
		return len(otlptest.Named(sp, "shield.edge")) == 1 && len(otlptest.Named(sp, "shield.request 999")) == 1
	})
	if !ok {
		t.Fatalf("spans: %+v", spans)
	}
	time.Sleep(1500 * time.Millisecond) // a batch interval: anything else would have arrived
	spans = r.Spans()
	if len(spans) != 2 {
		t.Errorf("exported %d spans, want the dropped frame's two: %+v", len(spans), spans)
	}
	req, edge := otlptest.Named(spans, "shield.request 999")[0], otlptest.Named(spans, "shield.edge")[0]
	if !req.Error || req.Attrs["shield.outcome"] != "client_rpc.route_not_found" || req.Attrs["shield.route_id"] != "999" {
		t.Errorf("dropped request span: %+v", req)
	}
	if edge.ParentID != req.SpanID || edge.Attrs["shield.verdict"] != "route_not_found" || !edge.Error {
		t.Errorf("edge span: %+v", edge)
	}
}

// TestTracingOff: with tracing off nothing is exported, whatever the
// endpoint and OTEL_* variables say.
func TestTracingOff(t *testing.T) {
	probe := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", probe.URL[:len(probe.URL)-len("/v1/traces")])
	r, dial := tracedServer(t, "enabled: false, sample_ratio: 1")
	c := dial("idlen", client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if err := c.Call(client.WithTraceParent(ctx, "00-7af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), dLeftCall, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // a batch interval
	if n := r.Requests() + probe.Requests(); n != 0 {
		t.Errorf("%d export requests with tracing off", n)
	}
}
