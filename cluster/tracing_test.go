package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shieldrpc/shield/client"
	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/tracing/otlptest"
)

// tracedPair starts gateway A (auth and calc, the embedded NATS with
// JetStream) and service node S (front, whose front_trace handler writes
// to kv and calls calc back on A), both exporting traces to r at ratio.
func tracedPair(t *testing.T, r *otlptest.Receiver, ratio string) (a, s *node) {
	t.Helper()
	port := freePort(t)
	top := "storage: {data_dir: " + t.TempDir() + ", buckets: [{name: players}]}\n" +
		"tracing: {enabled: true, endpoint: \"" + r.URL + "\", sample_ratio: " + ratio + "}\n"
	a = startNode(t, nodeSpec{name: "gw-a", services: "[auth, calc]", gateway: true, top: top,
		cluster: fmt.Sprintf("embedded: 127.0.0.1:%d", port)})
	s = startNode(t, nodeSpec{name: "svc", services: "[player, room, front]", top: top,
		cluster: fmt.Sprintf("nats: nats://127.0.0.1:%d", port)})
	waitReady(t, a, s)
	return a, s
}

// traceCall makes a front_trace request with tp as its traceparent ("" for
// none) and returns its error.
func traceCall(c *client.Client, tp, key, method string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if tp != "" {
		ctx = client.WithTraceParent(ctx, tp)
	}
	var resp struct {
		Sum int `json:"sum"`
	}
	err := c.Call(ctx, routeTrace, map[string]any{"key": key, "a": 2, "b": 3, "method": method}, &resp)
	return resp.Sum, err
}

// TestTraceAcrossNodes (docs/tracing.md): one request from a client that
// sends a traceparent, read on gateway A, handled on service node S (a kv
// write, a shield.call to calc back on A), answered through A: one trace,
// the client's, with every span's parent and attributes as the span table
// says, from both nodes; and the handler's log line carries the trace.
func TestTraceAcrossNodes(t *testing.T) {
	testutil.CheckGoroutines(t)
	r := otlptest.New(t)
	a, s := tracedPair(t, r, "1")
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	c := dial(t, a, "front")
	if sum, err := traceCall(c, "00-"+traceID+"-"+clientSpan+"-01", "alice", "add"); err != nil || sum != 5 {
		t.Fatalf("front_trace: %d, %v", sum, err)
	}
	want := []string{"shield.request front_trace", "shield.edge", "shield.queue", "shield.handler front_trace",
		"shield.kv.put", "shield.call calc.add", "shield.method calc.add", "shield.write"}
	spans, ok := r.WaitFor(10*time.Second, func(sp []otlptest.Span) bool {
		for _, name := range want {
			if len(otlptest.Named(sp, name)) == 0 {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("spans received: %+v", spans)
	}
	one := func(name string) otlptest.Span {
		t.Helper()
		got := otlptest.Named(spans, name)
		if len(got) != 1 {
			t.Fatalf("%d spans %q, want 1", len(got), name)
		}
		return got[0]
	}
	for _, sp := range spans {
		if sp.TraceID != traceID {
			t.Errorf("span %q in trace %s, want the client's %s", sp.Name, sp.TraceID, traceID)
		}
		if sp.Attrs["shield.outcome"] != "ok" || sp.Error {
			t.Errorf("span %q outcome %q", sp.Name, sp.Attrs["shield.outcome"])
		}
	}
	req, handler, call := one("shield.request front_trace"), one("shield.handler front_trace"), one("shield.call calc.add")
	sid := req.Attrs["shield.session_id"] // the session's id, which the client does not see
	if n, err := strconv.ParseUint(sid, 10, 64); err != nil || n == 0 {
		t.Errorf("shield.session_id %q", sid)
	}
	for _, x := range []struct {
		name, parent, node, kind string
		attrs                    map[string]string
	}{
		{"shield.request front_trace", clientSpan, "gw-a", "server",
			map[string]string{"shield.route": "front_trace", "shield.route_id": "9503", "shield.session_id": sid, "shield.node": "gw-a"}},
		{"shield.edge", req.SpanID, "gw-a", "internal", map[string]string{"shield.verdict": "admitted"}},
		{"shield.queue", req.SpanID, "svc", "internal", map[string]string{"shield.service": "front", "shield.instance": "0"}},
		{"shield.handler front_trace", req.SpanID, "svc", "internal",
			map[string]string{"shield.service": "front", "shield.instance": "0", "shield.route": "front_trace", "shield.session_id": sid}},
		{"shield.kv.put", handler.SpanID, "svc", "client", map[string]string{"shield.bucket": "players"}},
		{"shield.call calc.add", handler.SpanID, "svc", "client", map[string]string{"shield.service": "calc", "shield.method": "add"}},
		{"shield.method calc.add", call.SpanID, "gw-a", "server",
			map[string]string{"shield.service": "calc", "shield.instance": "0", "shield.method": "add"}},
		{"shield.write", req.SpanID, "gw-a", "internal", nil},
	} {
		sp := one(x.name)
		if sp.ParentID != x.parent || sp.Resource["shield.node"] != x.node || sp.Kind != x.kind {
			t.Errorf("%s: parent %s node %s kind %s; want %s %s %s", x.name, sp.ParentID, sp.Resource["shield.node"], sp.Kind,
				x.parent, x.node, x.kind)
		}
		for k, v := range x.attrs {
			if sp.Attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q", x.name, k, sp.Attrs[k], v)
			}
		}
		if sp.End.Before(sp.Start) {
			t.Errorf("%s ends before it starts", x.name)
		}
	}
	if req.End.Before(one("shield.write").End) || handler.Start.Before(req.Start) {
		t.Errorf("the request span does not enclose its children")
	}
	if i := s.Logs.Find("traced", "trace_id", traceID, "span_id", handler.SpanID); i < 0 {
		t.Errorf("the handler's log line has no trace_id %s and span_id %s", traceID, handler.SpanID)
	}
}

// TestTraceErrorsAlways: at sample_ratio 0 a request that succeeds
// exports nothing, and one that fails exports its failing spans, on both
// nodes; a request without a traceparent starts a trace of its own.
func TestTraceErrorsAlways(t *testing.T) {
	testutil.CheckGoroutines(t)
	r := otlptest.New(t)
	a, _ := tracedPair(t, r, "0")
	c := dial(t, a, "front")
	if _, err := traceCall(c, "", "bob", "add"); err != nil {
		t.Fatal(err)
	}
	if _, err := traceCall(c, "", "bob", "fail"); codeOf(err) != "calc.bad_input" {
		t.Fatalf("front_trace calling calc.fail: %v, want calc.bad_input", err)
	}
	want := []string{"shield.request front_trace", "shield.handler front_trace", "shield.call calc.fail", "shield.method calc.fail"}
	spans, ok := r.WaitFor(10*time.Second, func(sp []otlptest.Span) bool {
		for _, name := range want {
			if len(otlptest.Named(sp, name)) != 1 {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("spans received: %+v", spans)
	}
	time.Sleep(1500 * time.Millisecond) // a batch interval: anything else would have arrived
	spans = r.Spans()
	root := otlptest.Named(spans, "shield.request front_trace")[0]
	if root.ParentID != "" {
		t.Errorf("the request span has parent %s; the client sent none", root.ParentID)
	}
	for _, sp := range spans {
		if !sp.Error || sp.Attrs["shield.outcome"] != "calc.bad_input" || sp.TraceID != root.TraceID {
			t.Errorf("exported %q (outcome %q, trace %s) at ratio 0", sp.Name, sp.Attrs["shield.outcome"], sp.TraceID)
		}
	}
}
