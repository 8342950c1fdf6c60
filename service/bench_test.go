package service_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/service"
)

// countingGateway is the benchmarks' gateway: it only counts answers, so
// that recording them does not weigh on what is measured.
type countingGateway struct {
	answers atomic.Int64
	failed  atomic.Int64
	wake    chan struct{}
}

func (g *countingGateway) Respond(r *egress.Response) {
	if r.Err != nil {
		g.failed.Add(1)
	}
	g.answers.Add(1)
	select {
	case g.wake <- struct{}{}:
	default:
	}
}
func (g *countingGateway) Push(p *egress.Push) []codes.Code {
	return make([]codes.Code, len(p.Targets))
}
func (g *countingGateway) Bind(b *egress.BindRequest, done egress.BindDone) { done(b.Ref, nil) }
func (g *countingGateway) Kick(egress.ClientRef, string) *codes.Error       { return nil }

// benchWorld starts files with a counting gateway.
func benchWorld(b *testing.B, files map[string]string) (*service.Runtime, *countingGateway) {
	b.Helper()
	dir := b.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), bootstrap.Options{})
	if err != nil {
		b.Fatal(err)
	}
	gw := &countingGateway{wake: make(chan struct{}, 1)}
	rt := rep.Runtime
	rt.SetSink(gw)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt, gw
}

// waitAnswers waits until the gateway has n answers.
func (g *countingGateway) waitAnswers(b *testing.B, n int64) {
	deadline := time.Now().Add(time.Minute)
	for g.answers.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d answers", g.answers.Load(), n)
		}
		select {
		case <-g.wake:
		case <-time.After(time.Millisecond):
		}
	}
}

// BenchmarkActorMessages measures client messages through one actor: a
// ClientIngress with a small JSON body goes in through Runtime.Deliver,
// the handler returns its request, and the response reaches the gateway.
// Up to a lane's worth of messages are in flight, as under load.
func BenchmarkActorMessages(b *testing.B) {
	rt, gw := benchWorld(b, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "mailbox: 1024", "\n      - {id: 1, binding: echo}")),
		"a.lua":       `local M = {} function M.echo(ctx, client, req) return req end return M`,
	})
	body := []byte(`{"x":12,"y":-3,"name":"hero"}`)
	target := egress.ActorID{Service: "a"}
	const window = 512
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		for int64(i)-gw.answers.Load() >= window {
			<-gw.wake
		}
		in := &ingress.ClientIngress{Client: ingress.ClientContext{
			Ref: egress.ClientRef{SessionID: 1, Epoch: 1, Gateway: "gw-bench"}, RouteID: 1, RequestID: uint64(i + 1)},
			Body: body, Codec: "json"}
		if err := rt.Deliver(target, in); err != nil {
			b.Fatal(err)
		}
	}
	gw.waitAnswers(b, int64(b.N))
	elapsed, used := time.Since(start), cpuTime()-cpu
	b.StopTimer()
	if n := gw.failed.Load(); n != 0 {
		b.Fatalf("%d requests failed", n)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/msg")
}

// BenchmarkCallRoundTrip measures shield.call round trips between two
// services: one handler calls the other b.N times in a row.
func BenchmarkCallRoundTrip(b *testing.B) {
	// One handler run makes all b.N calls: it gets the longest budget a
	// config allows (SPEC §2: handler_timeout is at most 60s).
	rt, gw := benchWorld(b, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			luatest.ActorYAML("a", "handler_timeout: 60s", "\n      - {id: 1, binding: loop}"),
			luatest.ActorYAML("b", "", "")),
		"a.lua": `local M = {}
function M.loop(ctx, client, req)
  local call, sum = shield.call, 0
  for i = 1, req.n do sum = sum + call("b", "echo", i) end
  return sum
end
return M`,
		"b.lua": `local M = {} function M.echo(ctx, v) return v end return M`,
	})
	in := func(n int) *ingress.ClientIngress {
		return &ingress.ClientIngress{Client: ingress.ClientContext{Ref: egress.ClientRef{SessionID: 1, Epoch: 1, Gateway: "gw-bench"}, RouteID: 1, RequestID: 1},
			Body: []byte(`{"n":` + strconv.Itoa(n) + `}`), Codec: "json"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	if err := rt.Deliver(egress.ActorID{Service: "a"}, in(b.N)); err != nil {
		b.Fatal(err)
	}
	gw.waitAnswers(b, 1)
	elapsed, used := time.Since(start), cpuTime()-cpu
	b.StopTimer()
	if gw.failed.Load() != 0 {
		b.Fatal("the loop failed")
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/call")
}

// cpuTime is the process's user and system CPU time so far: on a shared
// machine, CPU per message says more than wall-clock rates, which other
// processes' load drags down.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
