package luavm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/service"
)

// These tests run real scripts in real VMs under the real runtime; the only
// fake is the gateway, which records what the services send it.

// recorder is a gateway that records what services send it. A push whose
// body is "panic" and a bind of player "panic" panic, to crash the VM that
// called them from Lua.
type recorder struct {
	mu      sync.Mutex // guards everything below
	resp    []*egress.Response
	pushes  []*egress.Push
	binds   []*egress.BindRequest
	kicks   []kick
	rejectN map[uint64]codes.Code // session_id -> the code Push rejects it with
	changed chan struct{}         // a token after each Respond
}

type kick struct {
	ref    egress.ClientRef
	reason string
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}, 1), rejectN: map[uint64]codes.Code{}}
}

func (r *recorder) Name() string { return "gw-test" }

func (r *recorder) Respond(x *egress.Response) {
	r.mu.Lock()
	r.resp = append(r.resp, x)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) Push(p *egress.Push) []codes.Code {
	if string(p.Bodies["json"]) == `"panic"` {
		panic("recorder: push asked to panic")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushes = append(r.pushes, p)
	out := make([]codes.Code, len(p.Targets))
	for i, ref := range p.Targets {
		out[i] = r.rejectN[ref.SessionID]
	}
	return out
}

func (r *recorder) Bind(b *egress.BindRequest) (egress.ClientRef, error) {
	if b.PlayerID == "panic" {
		panic("recorder: bind asked to panic")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.binds = append(r.binds, b)
	if b.PlayerID == "stale" {
		return egress.ClientRef{}, codes.New(codes.EpochExpired, "epoch %d is stale", b.Ref.Epoch)
	}
	ref := b.Ref
	ref.Epoch++
	ref.PlayerID = b.PlayerID
	return ref, nil
}

func (r *recorder) Kick(ref egress.ClientRef, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref.SessionID == 404 {
		return codes.New(codes.SessionNotFound, "no session 404")
	}
	r.kicks = append(r.kicks, kick{ref, reason})
	return nil
}

// responses returns the responses to request id so far.
func (r *recorder) responses(id uint64) []*egress.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*egress.Response
	for _, x := range r.resp {
		if x.RequestID == id {
			out = append(out, x)
		}
	}
	return out
}

// wait polls until cond holds, failing after d.
func wait(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// logs captures the JSON log lines of a world.
type logs struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// records returns every log record whose msg is msg ("" for all).
func (l *logs) records(msg string) []map[string]any {
	l.mu.Lock()
	data := append([]byte(nil), l.buf.Bytes()...)
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && (msg == "" || m["msg"] == msg) {
			out = append(out, m)
		}
	}
	return out
}

// waitRecords waits until at least n records with msg were logged.
func (l *logs) waitRecords(t testing.TB, msg string, n int) []map[string]any {
	t.Helper()
	var got []map[string]any
	wait(t, 5*time.Second, fmt.Sprintf("%d log records %q", n, msg), func() bool {
		got = l.records(msg)
		return len(got) >= n
	})
	return got
}

// world is a running runtime built from a config and scripts in a temp dir.
type world struct {
	rt   *service.Runtime
	gw   *recorder
	logs *logs
	dir  string
	next atomic.Uint64 // request ids
}

// startWorld writes files (name -> content; "actors.yaml" is the config),
// compiles and starts them. At cleanup it stops the runtime and checks that
// no goroutine was left behind.
func startWorld(t testing.TB, files map[string]string) *world {
	t.Helper()
	w, err := tryWorld(t, files)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// tryWorld is startWorld returning Start's error instead of failing.
func tryWorld(t testing.TB, files map[string]string) (*world, error) {
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
	lg := &logs{}
	logger := slog.New(slog.NewJSONHandler(lg, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), bootstrap.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	gw := newRecorder()
	rt := service.New(rep.Config, rep.VMs, service.Options{Gateway: gw, Logger: logger, HeapLimitBytes: rep.Config.Lua.HeapLimitBytes})
	w := &world{rt: rt, gw: gw, logs: lg, dir: dir}
	w.next.Store(1000)
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range lg.records("") {
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
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w, rt.Start(ctx)
}

// client is the ClientContext of test requests.
func client(reqID uint64, routeID uint32) ingress.ClientContext {
	return ingress.ClientContext{
		Ref:     egress.ClientRef{SessionID: 7, Epoch: 3, Gateway: "gw-test"},
		Route:   fmt.Sprintf("r%d", routeID),
		RouteID: routeID, RequestID: reqID, RemoteAddr: "10.0.0.1:5555",
	}
}

// send delivers a JSON request to target and returns its request id.
func (w *world) send(t testing.TB, target string, routeID uint32, body string) uint64 {
	t.Helper()
	id := w.next.Add(1)
	w.deliver(t, target, &ingress.ClientIngress{Client: client(id, routeID), Body: []byte(body), Codec: "json"})
	return id
}

func (w *world) deliver(t testing.TB, target string, in *ingress.ClientIngress) {
	t.Helper()
	if err := w.rt.Deliver(actorID(target), in); err != nil {
		t.Fatalf("deliver: %v", err)
	}
}

// actorID reads "svc" or "svc/2".
func actorID(s string) egress.ActorID {
	name, inst, _ := strings.Cut(s, "/")
	id := egress.ActorID{Service: name}
	fmt.Sscan(inst, &id.Instance)
	return id
}

// await waits for the one response to request id.
func (w *world) await(t testing.TB, id uint64) *egress.Response {
	t.Helper()
	return w.awaitFor(t, id, 10*time.Second)
}

// awaitFor is await with a chosen patience.
func (w *world) awaitFor(t testing.TB, id uint64, d time.Duration) *egress.Response {
	t.Helper()
	var got []*egress.Response
	wait(t, d, fmt.Sprintf("response to request %d", id), func() bool {
		got = w.gw.responses(id)
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("request %d: %d responses", id, len(got))
	}
	return got[0]
}

// ask sends a JSON request and waits for its response.
func (w *world) ask(t testing.TB, target string, routeID uint32, body string) *egress.Response {
	t.Helper()
	return w.await(t, w.send(t, target, routeID, body))
}

// expect checks a response: want is the body, or an error code (anything
// shaped like one); msg, when set, is a regexp the error message must match.
func expect(t testing.TB, r *egress.Response, want string, msg string) {
	t.Helper()
	if codeLike.MatchString(want) {
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

var codeLike = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)

var incidentMsg = regexp.MustCompile(`^internal error \(incident ([0-9a-f]{16})\)$`)

// luaCase is one handler and what its request must answer.
type luaCase struct {
	name string
	body string // the body of function(ctx, client, req)
	req  string // the request body; "" sends {}
	want string // the response body, or an error code
	msg  string // a regexp for the error message
}

// caseActor returns the YAML of an actor whose routes 1..n are the cases'
// handlers, and its script: prelude (Lua run before the module is returned,
// with M in scope) and each case as M.c<i>.
func caseActor(name, opts string, prelude string, cases []luaCase) (yamlBlock, script string) {
	var routes, src strings.Builder
	src.WriteString("local M = {}\n" + prelude + "\n")
	for i, c := range cases {
		fmt.Fprintf(&routes, "\n      - {id: %d, name: %s_%d, binding: c%d}", i+1, name, i+1, i+1)
		fmt.Fprintf(&src, "-- %s\nfunction M.c%d(ctx, client, req)\n%s\nend\n", c.name, i+1, c.body)
	}
	src.WriteString("return M\n")
	return actorYAML(name, opts, routes.String()), src.String()
}

// actorYAML is one entry of actors: name.lua, extra keys, and rpc routes
// (YAML list items, or "" for none).
func actorYAML(name, opts, routes string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    script: %s.lua\n", name, name)
	for _, line := range strings.Split(strings.TrimSpace(opts), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	if routes != "" {
		b.WriteString("    rpc:\n      routes:" + routes + "\n")
	}
	return b.String()
}

// configYAML is an actors.yaml with one listener, extra top-level YAML and
// the actor entries.
func configYAML(top string, actors ...string) string {
	return "network:\n  listeners:\n    - {name: game, address: \"127.0.0.1:0\", entry_service: " +
		entryOf(actors) + "}\n" + top + "actors:\n" + strings.Join(actors, "")
}

func entryOf(actors []string) string {
	_, rest, _ := strings.Cut(actors[0], "name: ")
	name, _, _ := strings.Cut(rest, "\n")
	return name
}

type yamlBlock = string

// runCases runs each case against target as a subtest.
func runCases(t *testing.T, w *world, target string, cases []luaCase) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.req
			if req == "" {
				req = "{}"
			}
			expect(t, w.ask(t, target, uint32(i+1), req), c.want, c.msg)
		})
	}
}
