// Package otlptest is an OTLP/HTTP trace receiver for tests: a real HTTP
// server on loopback that decodes the protobuf export requests Shield's
// exporter sends, as a collector would, and keeps the spans.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name     string
	Kind     string // "server", "client", "internal", "producer", "consumer"
	TraceID  string // lower-case hex
	SpanID   string
	ParentID string // "" for a root
	Error    bool   // status code ERROR
	Attrs    map[string]string
	Resource map[string]string
	Start    time.Time
	End      time.Time
}

// Receiver is the server. URL is its traces endpoint.
type Receiver struct {
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	spans    []Span
	requests int
}

// New starts a receiver; the test's cleanup stops it.
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	// Each export on a connection of its own, closed after it: the
	// exporter's idle connections, in a transport the OpenTelemetry SDK
	// shares process-wide, would otherwise outlive the tracer and fail the
	// tests' goroutine checks.
	r.srv.Config.SetKeepAlivesEnabled(false)
	r.srv.Start()
	r.URL = r.srv.URL + "/v1/traces"
	t.Cleanup(r.srv.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range msg.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				got = append(got, Span{
					Name:     s.Name,
					Kind:     kind(s.Kind.String()),
					TraceID:  hex.EncodeToString(s.TraceId),
					SpanID:   hex.EncodeToString(s.SpanId),
					ParentID: parent(s.ParentSpanId),
					Error:    s.GetStatus().GetCode().String() == "STATUS_CODE_ERROR",
					Attrs:    attrs(s.Attributes),
					Resource: res,
					Start:    time.Unix(0, int64(s.StartTimeUnixNano)),
					End:      time.Unix(0, int64(s.EndTimeUnixNano)),
				})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// Spans returns a copy of what has arrived so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests is the number of export requests received.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// WaitFor polls until match holds for the spans received or d passes,
// and returns the spans it last saw.
func (r *Receiver) WaitFor(d time.Duration, match func([]Span) bool) ([]Span, bool) {
	deadline := time.Now().Add(d)
	for {
		s := r.Spans()
		if match(s) {
			return s, true
		}
		if time.Now().After(deadline) {
			return s, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Named returns the spans named name.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func parent(id []byte) string {
	if len(id) == 0 {
		return ""
	}
	return hex.EncodeToString(id)
}

func kind(k string) string {
	switch k {
	case "SPAN_KIND_SERVER":
		return "server"
	case "SPAN_KIND_CLIENT":
		return "client"
	case "SPAN_KIND_PRODUCER":
		return "producer"
	case "SPAN_KIND_CONSUMER":
		return "consumer"
	}
	return "internal"
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(x.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			if x.BoolValue {
				m[kv.Key] = "true"
			} else {
				m[kv.Key] = "false"
			}
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}
