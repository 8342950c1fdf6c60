package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
)

// batchGateway is a gateway that takes answers in batches
// (egress.BatchSink) and logs, in order, each batch's size and each push.
type batchGateway struct {
	mu      sync.Mutex // guards events and answers
	events  []string
	answers int
}

var _ egress.BatchSink = (*batchGateway)(nil)

func (g *batchGateway) Respond(r *egress.Response) { g.RespondAll([]*egress.Response{r}) }
func (g *batchGateway) RespondAll(rs []*egress.Response) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, fmt.Sprintf("answers %d", len(rs)))
	g.answers += len(rs)
}
func (g *batchGateway) Push(p *egress.Push) []codes.Code {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, "push "+string(p.Bodies["json"]))
	return make([]codes.Code, len(p.Targets))
}
func (g *batchGateway) Bind(b *egress.BindRequest, done egress.BindDone) { done(b.Ref, nil) }
func (g *batchGateway) Kick(egress.ClientRef, string) *codes.Error       { return nil }

// TestAnswersHandedOverPerStep: an actor hands its VM's answers over a
// step at a time, at most 16 together, and before anything else the VM
// sends (a push), so that the client sees them in the order the VM made
// them.
func TestAnswersHandedOverPerStep(t *testing.T) {
	gw := &batchGateway{}
	events := answersPerStep(t, gw, gw)
	if want := []string{"answers 16", "answers 1", `push {"n":18}`, "answers 3"}; fmt.Sprint(events) != fmt.Sprint(want) {
		t.Errorf("the gateway saw %q, want %q", events, want)
	}
}

// answersPerStep runs 20 frames (the 18th pushes) queued before the actor
// starts, so that they are one step's work, and returns what gw, which
// logs through b, saw.
func answersPerStep(t *testing.T, gw egress.Sink, b *batchGateway) []string {
	testutil.CheckGoroutines(t)
	dir := t.TempDir()
	files := map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "mailbox: 1024",
			"\n      - {id: 1, binding: echo}\n      - {id: 2, binding: shout}\n      - {id: 3, binding: note, direction: s2c}")),
		"a.lua": `local M = {}
function M.echo(ctx, client, req) return req end
function M.shout(ctx, client, req) shield.client_rpc.note(client, req) return req end
return M`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), bootstrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt := rep.Runtime
	rt.SetSink(gw)
	// Queued before the actor runs, the frames are one step's work.
	in := func(route uint32, id uint64) *ingress.ClientIngress {
		c := luatest.Client(id, route)
		return &ingress.ClientIngress{Client: c, Body: []byte(fmt.Sprintf(`{"n":%d}`, id)), Codec: "json", Received: time.Now()}
	}
	for id := uint64(1); id <= 20; id++ {
		route := uint32(1)
		if id == 18 {
			route = 2
		}
		if err := rt.Deliver(egress.ActorID{Service: "a"}, in(route, id)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	luatest.Wait(t, 5*time.Second, "20 answers", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.answers == 20
	})
	if err := rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.events...)
}
