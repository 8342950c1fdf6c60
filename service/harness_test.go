package service

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// recorder is a gateway that records what services send it.
type recorder struct {
	mu     sync.Mutex
	resp   []*egress.Response
	pushes []*egress.Push
	binds  []*egress.BindRequest
	kicks  []egress.ClientRef
	notify chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1024)} }

func (r *recorder) Name() string { return "gw-test" }
func (r *recorder) Respond(x *egress.Response) {
	r.mu.Lock()
	r.resp = append(r.resp, x)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}
func (r *recorder) Push(p *egress.Push) []codes.Code {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushes = append(r.pushes, p)
	return make([]codes.Code, len(p.Targets))
}
func (r *recorder) Bind(b *egress.BindRequest) (egress.ClientRef, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.binds = append(r.binds, b)
	ref := b.Ref
	ref.Epoch++
	ref.PlayerID = b.PlayerID
	return ref, nil
}
func (r *recorder) Kick(ref egress.ClientRef, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kicks = append(r.kicks, ref)
	return nil
}

// waitResponses waits until n responses arrived and returns them.
func (r *recorder) waitResponses(t testing.TB, n int) []*egress.Response {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.resp)
		out := append([]*egress.Response(nil), r.resp...)
		r.mu.Unlock()
		if got >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d responses, want %d", got, n)
		}
		select {
		case <-r.notify:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// world is a running runtime built from a config and scripts in a temp dir.
type world struct {
	rt  *Runtime
	gw  *recorder
	rep *bootstrap.Report
}

// startWorld writes files (name -> content; "actors.yaml" is the config)
// and starts them. It stops everything and checks for leaked goroutines at
// cleanup.
func startWorld(t testing.TB, files map[string]string) *world {
	t.Helper()
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), bootstrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw := newRecorder()
	rt := New(rep.Config, rep.VMs, Options{Gateway: gw, HeapLimitBytes: rep.Config.Lua.HeapLimitBytes})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Stop(ctx)
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
	return &world{rt: rt, gw: gw, rep: rep}
}

// request delivers a client request to a target VM.
func (w *world) request(t testing.TB, target egress.ActorID, routeID uint32, reqID uint64, body string) {
	t.Helper()
	in := &ingress.ClientIngress{
		Client: ingress.ClientContext{Ref: egress.ClientRef{SessionID: reqID, Epoch: 1, Gateway: "gw-test"}, RouteID: routeID, RequestID: reqID},
		Body:   []byte(body),
		Codec:  "json",
	}
	if err := w.rt.Deliver(target, in); err != nil {
		t.Fatalf("deliver: %v", err)
	}
}

// yaml builds an actors.yaml with one listener and the given actor blocks.
func yaml(actors ...string) string {
	return `network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: a}
actors:
` + strings.Join(actors, "\n")
}
