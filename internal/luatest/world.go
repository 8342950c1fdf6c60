package luatest

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/metrics"
	"github.com/shieldrpc/shield/service"
)

// World is a running runtime built from a config and scripts in a temp dir.
type World struct {
	Runtime *service.Runtime
	Gateway *Recorder
	Logs    *Logs
	Dir     string        // the temp dir holding actors.yaml and the scripts
	Next    atomic.Uint64 // request ids; the first Send uses 1001
}

// Options are what a package's harness adds to its worlds.
type Options struct {
	Metrics *metrics.Metrics // nil: nothing is counted
}

// StartWorld writes files (name -> content; "actors.yaml" is the config),
// compiles and starts them. At cleanup it stops the runtime and checks that
// no goroutine was left behind.
func StartWorld(t testing.TB, files map[string]string, opts Options) *World {
	t.Helper()
	w, err := TryWorld(t, files, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TryWorld is StartWorld returning Start's error instead of failing.
func TryWorld(t testing.TB, files map[string]string, opts Options) (*World, error) {
	t.Helper()
	// First, so that its check runs after the cleanup below has stopped
	// the runtime.
	testutil.CheckGoroutines(t)
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, files)
	lg := &Logs{t: t}
	logger := slog.New(slog.NewJSONHandler(lg, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), bootstrap.Options{Logger: logger, Metrics: opts.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	gw := NewRecorder()
	rt := rep.Runtime
	rt.SetSink(gw)
	w := &World{Runtime: rt, Gateway: gw, Logs: lg, Dir: dir}
	w.Next.Store(1000)
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range lg.Records("") {
				if r["level"] != "DEBUG" && r["level"] != "INFO" {
					t.Logf("log: %v", r)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		lg.Check() // the runtime is stopped: every line is written
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w, rt.Start(ctx)
}

// Client is the ClientContext of test requests.
func Client(reqID uint64, routeID uint32) ingress.ClientContext {
	return ingress.ClientContext{
		Ref:     egress.ClientRef{SessionID: 7, Epoch: 3, Gateway: GatewayName},
		Route:   fmt.Sprintf("r%d", routeID),
		RouteID: routeID, RequestID: reqID, RemoteAddr: "10.0.0.1:5555",
	}
}

// Send delivers a JSON request to target and returns its request id.
func (w *World) Send(t testing.TB, target string, routeID uint32, body string) uint64 {
	t.Helper()
	id := w.Next.Add(1)
	w.Deliver(t, target, &ingress.ClientIngress{Client: Client(id, routeID), Body: []byte(body), Codec: "json"})
	return id
}

// Deliver hands in to target ("svc" or "svc/2"), failing t if the runtime
// refuses it.
func (w *World) Deliver(t testing.TB, target string, in *ingress.ClientIngress) {
	t.Helper()
	if err := w.Runtime.Deliver(ActorID(target), in); err != nil {
		t.Fatalf("deliver: %v", err)
	}
}

// ActorID reads "svc" or "svc/2".
func ActorID(s string) egress.ActorID {
	name, inst, _ := strings.Cut(s, "/")
	id := egress.ActorID{Service: name}
	fmt.Sscan(inst, &id.Instance)
	return id
}

// Await waits for the one response to request id.
func (w *World) Await(t testing.TB, id uint64) *egress.Response {
	t.Helper()
	return w.AwaitFor(t, id, 10*time.Second)
}

// AwaitFor is Await with a chosen patience.
func (w *World) AwaitFor(t testing.TB, id uint64, d time.Duration) *egress.Response {
	t.Helper()
	var got []*egress.Response
	Wait(t, d, fmt.Sprintf("response to request %d", id), func() bool {
		got = w.Gateway.Responses(id)
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("request %d: %d responses", id, len(got))
	}
	return got[0]
}

// Ask sends a JSON request and waits for its response.
func (w *World) Ask(t testing.TB, target string, routeID uint32, body string) *egress.Response {
	t.Helper()
	return w.Await(t, w.Send(t, target, routeID, body))
}

// Expect checks a response: want is the body, or an error code (anything
// shaped like one); msg, when set, is a regexp the error message must match.
func Expect(t testing.TB, r *egress.Response, want string, msg string) {
	t.Helper()
	if CodeLike.MatchString(want) {
		if r.Err == nil {
			t.Fatalf("got body %s, want error %s", r.Body, want)
		}
		if string(r.Err.Code) != want {
			t.Fatalf("got error %s: %s, want %s", r.Err.Code, r.Err.Message, want)
		}
		if msg != "" && !regexp.MustCompile(msg).MatchString(r.Err.Message) {
			t.Fatalf("error message %q does not match %q", r.Err.Message, msg)
		}
		return
	}
	if r.Err != nil {
		t.Fatalf("got error %s: %s, want body %s", r.Err.Code, r.Err.Message, want)
	}
	if string(r.Body) != want {
		t.Fatalf("got body %s, want %s", r.Body, want)
	}
}

// CodeLike matches what Expect takes for an error code rather than a body.
var CodeLike = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)

// IncidentMsg matches the message of an internal error; its group is the
// incident id, also logged.
var IncidentMsg = regexp.MustCompile(`^internal error \(incident ([0-9a-f]{16})\)$`)
