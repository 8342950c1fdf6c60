package luavm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/luavm"
)

// host is a luavm.Host that records calls and answers; the runtime is the
// real one everywhere else, but this test needs two VMs standing in for
// one actor before and after a crash.
type host struct {
	calls []*luavm.Call
	resp  []*egress.Response
}

func (h *host) Self() egress.ActorID { return egress.ActorID{Service: "a"} }
func (h *host) Pick(s, _ string) (egress.ActorID, *codes.Error) {
	return egress.ActorID{Service: s}, nil
}
func (h *host) Route(c *luavm.Call) *codes.Error                 { h.calls = append(h.calls, c); return nil }
func (h *host) Return(*luavm.Result)                             {}
func (h *host) Sink() egress.Sink                                { return h }
func (h *host) Respond(r *egress.Response)                       { h.resp = append(h.resp, r) }
func (h *host) Push(p *egress.Push) []codes.Code                 { return make([]codes.Code, len(p.Targets)) }
func (h *host) Bind(_ *egress.BindRequest, done egress.BindDone) { done(egress.ClientRef{}, nil) }
func (h *host) Kick(egress.ClientRef, string) *codes.Error       { return nil }

// TestReplyToAnEarlierVM checks that a reply meant for the VM an actor had
// before a crash does not resume the replacement's call with the same id.
func TestReplyToAnEarlierVM(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "a.lua")
	src := `local M = {} function M.go(ctx, client, req) return shield.call("b", "m") end return M`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := luavm.Spec{Service: "a", Script: script, Routes: []descriptor.Route{
		{ID: 1, Binding: "go", Direction: config.C2S, Owner: "a", Action: config.DecodeLocal}}}
	var vms [2]*luavm.VM
	var hosts [2]*host
	for i := range vms {
		vm, err := luavm.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		vms[i], hosts[i] = vm, &host{}
		vm.Attach(hosts[i])
		vm.HandleIngress(&ingress.ClientIngress{Client: luatest.Client(uint64(i+1), 1), Body: []byte("{}"), Codec: "json"})
	}
	old, cur := hosts[0].calls[0], hosts[1].calls[0]
	if old.ID != cur.ID || old.Gen == cur.Gen {
		t.Fatalf("calls %d/%d and %d/%d: the test needs equal ids and different generations", old.ID, old.Gen, cur.ID, cur.Gen)
	}
	vms[1].HandleResult(&luavm.Result{To: old.From, ID: old.ID, Gen: old.Gen, Values: [][]byte{[]byte(`"stale"`)}})
	if len(hosts[1].resp) != 0 {
		t.Fatalf("the stale reply answered: %s", hosts[1].resp[0].Body)
	}
	vms[1].HandleResult(&luavm.Result{To: cur.From, ID: cur.ID, Gen: cur.Gen, Values: [][]byte{[]byte(`"fresh"`)}})
	if len(hosts[1].resp) != 1 || string(hosts[1].resp[0].Body) != `"fresh"` {
		t.Fatalf("responses %+v", hosts[1].resp)
	}
}

// TestTimerHeapShrinks checks that what can no longer fire leaves the timer
// heap at once: cancelled timeouts, and the budget and sleep of a task that
// finished, so that long timers set and dropped in a loop cost nothing.
func TestTimerHeapShrinks(t *testing.T) {
	vm := benchVM(t, `local M = {}
function M.echo(ctx, client, req)
  if req.cancel then
    for i = 1, 1000 do shield.cancel(shield.timeout(1e9, function() end)) end
    return "cancelled"
  end
  shield.sleep(1e12)
end
return M`)
	defer vm.Close()
	h := &host{}
	vm.Attach(h)
	vm.HandleIngress(&ingress.ClientIngress{Client: luatest.Client(1, 1), Body: []byte(`{"cancel":true}`), Codec: "json"})
	if _, ok := vm.NextWake(); ok || len(h.resp) != 1 {
		t.Fatalf("after cancelling: wake pending %v, %d responses", ok, len(h.resp))
	}
	vm.HandleIngress(&ingress.ClientIngress{Client: luatest.Client(2, 1), Body: []byte(`{}`), Codec: "json"})
	at, ok := vm.NextWake()
	if !ok {
		t.Fatal("a sleeping task with no budget entry")
	}
	vm.Tick(at) // its budget ends before its sleep
	if _, ok := vm.NextWake(); ok {
		t.Fatal("the timed-out task's sleep is still scheduled")
	}
	if len(h.resp) != 2 || h.resp[1].Err == nil || h.resp[1].Err.Code != codes.Timeout {
		t.Fatalf("responses %+v", h.resp)
	}
	if tasks, pending := vm.Busy(); tasks != 0 || pending != 0 {
		t.Fatalf("busy %d %d", tasks, pending)
	}
}
