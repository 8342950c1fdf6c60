package service_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
)

// crashy panics the recording gateway from Lua in several ways. Its init
// logs, so that the test can count the VMs that were spawned, and count
// keeps state that a fresh VM does not have.
const crashy = `local M = {}
local counter = 0
function M.init(ctx) shield.log.info("init ran", "inst", ctx.instance) end
function M.push(ctx, client, req) shield.client_rpc.note(client, "panic") return "survived" end
function M.bind(ctx, client, req) shield.client.bind(client, "panic", "a") return "survived" end
function M.pcall_bind(ctx, client, req) local ok = pcall(shield.client.bind, client, "panic", "a") return "survived" end
function M.push_in_timer(ctx, client, req)
  shield.timeout(1, function() shield.client_rpc.note(client, "panic") end)
  return "queued"
end
function M.count(ctx, client, req) counter = counter + 1 return counter end
function M.sleeper(ctx, client, req) shield.sleep(5000) return "woke" end
function M.caller(ctx, client, req) return shield.call("b", "slow") end
function M.inc(ctx, n) return n + 1 end
function M.crash_actor(ctx, client, req) return "crash the actor" end
return M`

const crashyRoutes = `
      - {id: 1, binding: push}
      - {id: 2, binding: bind}
      - {id: 3, binding: pcall_bind}
      - {id: 4, binding: push_in_timer}
      - {id: 5, binding: count}
      - {id: 6, binding: sleeper}
      - {id: 7, binding: caller}
      - {id: 9, binding: crash_actor}
      - {id: 200, binding: note, direction: s2c}`

// TestGoPanicReplacesVM checks SPEC §6's last row: a Go panic under a
// handler fails the request with handler_failed, counts a restart, and a
// fresh VM (its init run again) serves what comes next. Each way to panic
// has a world of its own, so that a case run alone (-run .../bind) sees
// the same counts as in the whole run.
func TestGoPanicReplacesVM(t *testing.T) {
	for _, c := range []struct {
		name  string
		route uint32
		want  string
	}{
		{"push", 1, "client_rpc.handler_failed"},
		{"bind", 2, "client_rpc.handler_failed"},
		{"bind caught by pcall", 3, "client_rpc.handler_failed"},
		{"push in a timer", 4, `"queued"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := startWorld(t, map[string]string{
				"actors.yaml": luatest.ConfigYAML("",
					luatest.ActorYAML("a", "", crashyRoutes),
					luatest.ActorYAML("b", "", "\n      - {id: 8, binding: finished}")),
				"a.lua": crashy,
				// finished counts the runs of slow that returned: once it
				// says so, the reply of that run is on its caller's
				// control lane, which the caller reads before any business
				// message that comes after.
				"b.lua": `local M = {}
local finished = 0
function M.slow(ctx) shield.sleep(300) finished = finished + 1 return "slow" end
function M.finished(ctx, client, req) return finished end
return M`,
			})
			w.Logs.WaitRecords(t, "init ran", 1)
			// Some state for the crash to lose.
			w.Ask(t, "a", 5, "{}")
			w.Ask(t, "a", 5, "{}")
			sleeping := w.Send(t, "a", 6, "{}")
			calling := w.Send(t, "a", 7, "{}")
			luatest.Expect(t, w.Ask(t, "a", c.route, "{}"), c.want, luatest.IncidentMsg.String())
			// The VM is replaced once, and the old VM's waiting tasks fail.
			luatest.Wait(t, 5*time.Second, "the restart", func() bool { return w.metrics.get("a") == 1 })
			luatest.Expect(t, w.Await(t, sleeping), "client_rpc.handler_failed", luatest.IncidentMsg.String())
			luatest.Expect(t, w.Await(t, calling), "client_rpc.handler_failed", luatest.IncidentMsg.String())
			w.Logs.WaitRecords(t, "init ran", 2)
			// The fresh VM starts from scratch and serves.
			luatest.Expect(t, w.Ask(t, "a", 5, "{}"), "1", "")
			// b's late reply to the old VM's call resumes nothing in the
			// new one: wait until b has sent it, then a counts on from 1.
			luatest.Wait(t, 5*time.Second, "b's late reply", func() bool {
				r := w.Ask(t, "b", 8, "{}")
				return r.Err == nil && string(r.Body) == "1"
			})
			luatest.Expect(t, w.Ask(t, "a", 5, "{}"), "2", "")

			if n := len(w.Logs.Records("init ran")); n != 2 {
				t.Fatalf("init ran %d times, want 2", n)
			}
			if w.metrics.get("a") != 1 || w.metrics.get("b") != 0 {
				t.Fatalf("restarts: a %d, b %d; want 1 and 0", w.metrics.get("a"), w.metrics.get("b"))
			}
			var panics int
			for _, r := range w.Logs.Records("") {
				if r["level"] == "ERROR" && r["stack"] != nil && r["incident"] != nil {
					panics++
				}
			}
			if panics != 1 {
				t.Fatalf("%d panics logged with their stack, want 1", panics)
			}
		})
	}
}

// TestReplacementFails checks an instance whose replacement VM cannot
// start (its init raises: SPEC §8, the VM is not started): requests are
// answered with unavailable, and Stop still returns.
func TestReplacementFails(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "", crashyRoutes), luatest.ActorYAML("b", "", "")),
		"a.lua": strings.Replace(crashy, `function M.init(ctx) shield.log.info("init ran", "inst", ctx.instance) end`,
			`function M.init(ctx) if shield.call("b", "inits") > 1 then error("no second init") end end`, 1),
		"b.lua": `local n = 0 return { inits = function() n = n + 1 return n end }`,
	})
	sleeping := w.Send(t, "a", 6, "{}")
	crash := w.Send(t, "a", 1, "{}")
	// The crash races these: each is either queued (and then answered by
	// the dying instance) or refused at once as unavailable.
	queued := make([]uint64, 0, 3)
	for i := 0; i < 3; i++ {
		id := w.Next.Add(1)
		in := &ingress.ClientIngress{Client: luatest.Client(id, 5), Body: []byte("{}"), Codec: "json"}
		if err := w.Runtime.Deliver(luatest.ActorID("a"), in); err != nil {
			if err.Code != "client_rpc.unavailable" {
				t.Fatalf("deliver: %v", err)
			}
			continue
		}
		queued = append(queued, id)
	}
	luatest.Expect(t, w.Await(t, crash), "client_rpc.handler_failed", "")
	luatest.Expect(t, w.Await(t, sleeping), "client_rpc.handler_failed", luatest.IncidentMsg.String())
	for _, id := range queued {
		r := w.Await(t, id)
		if r.Err == nil && string(r.Body) != "1" {
			t.Fatalf("queued request: %s", r.Body)
		}
		if r.Err != nil && r.Err.Code != "client_rpc.unavailable" {
			t.Fatalf("queued request: %v", r.Err)
		}
	}
	w.Logs.WaitRecords(t, "init of replacement VM failed; the instance is out of service", 1)
	in := &ingress.ClientIngress{Client: luatest.Client(1, 5), Body: []byte("{}"), Codec: "json"}
	if err := w.Runtime.Deliver(luatest.ActorID("a"), in); err == nil || err.Code != "client_rpc.unavailable" {
		t.Fatalf("deliver to a dead instance: %v", err)
	}
}

// panicky is a body codec that panics, standing in for a codec bug.
type panicky struct{}

func (panicky) Name() string { return "test-panicky" }
func (panicky) Decode(L *lua.LState, _ string, body []byte) (lua.LValue, error) {
	if string(body) == "panic" {
		panic("panicky: decode asked to panic")
	}
	return lua.LString(body), nil
}
func (panicky) Encode(*lua.LState, string, lua.LValue) ([]byte, error) {
	panic("panicky: encode always panics")
}

// TestCodecPanic checks that a Go panic in a codec, outside any Lua run,
// still answers the request (handler_failed) and replaces the VM.
func TestCodecPanic(t *testing.T) {
	codec.Register(panicky{})
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "", crashyRoutes)),
		"a.lua":       crashy,
	})
	for i, body := range []string{"panic", "fine"} { // the decode panics, then the encode
		id := w.Next.Add(1)
		w.Deliver(t, "a", &ingress.ClientIngress{Client: luatest.Client(id, 5), Body: []byte(body), Codec: "test-panicky"})
		luatest.Expect(t, w.Await(t, id), "client_rpc.handler_failed", luatest.IncidentMsg.String())
		luatest.Wait(t, 5*time.Second, "the restart", func() bool { return w.metrics.get("a") == i+1 })
	}
	luatest.Expect(t, w.Ask(t, "a", 5, "{}"), "1", "")
}

// TestRespawnUsesItsOwnCode (SPEC §12): a VM replaced after a crash loads
// the code its actor runs, never newer files found on disk: a script
// changed without a reload does not sneak in through a crash.
func TestRespawnUsesItsOwnCode(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "", crashyRoutes), luatest.ActorYAML("b", "", "")),
		"a.lua":       crashy,
		"b.lua":       `return {}`,
	})
	newer := strings.Replace(crashy, "counter = counter + 1 return counter", "return 1000", 1)
	if err := os.WriteFile(filepath.Join(w.Dir, "a.lua"), []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	luatest.Expect(t, w.Ask(t, "a", 1, "{}"), "client_rpc.handler_failed", "")
	luatest.Wait(t, 5*time.Second, "the restart", func() bool { return w.metrics.get("a") == 1 })
	luatest.Expect(t, w.Ask(t, "a", 5, "{}"), "1", "")
}

// TestPanicInActorReplacesVM (SPEC §6): a Go panic that escapes into the
// actor's step outside any Lua run (here: the gateway panics taking a
// response) crashes the VM all the same (VM.Crash): logged once with its
// stack and an incident, counted in shield_vm_restarts_total, the old
// VM's waiting tasks answer handler_failed with that incident, and a fresh
// VM (its init run again) serves what comes next.
func TestPanicInActorReplacesVM(t *testing.T) {
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML("", luatest.ActorYAML("a", "", crashyRoutes)),
		"a.lua":       crashy,
	})
	w.Logs.WaitRecords(t, "init ran", 1)
	luatest.Expect(t, w.Ask(t, "a", 5, "{}"), "1", "")
	sleeping := w.Send(t, "a", 6, "{}")
	w.Send(t, "a", 9, "{}") // its answer is the panic: it never arrives
	luatest.Wait(t, 5*time.Second, "the restart", func() bool { return w.metrics.get("a") == 1 })
	luatest.Expect(t, w.Await(t, sleeping), "client_rpc.handler_failed", luatest.IncidentMsg.String())
	w.Logs.WaitRecords(t, "init ran", 2)
	luatest.Expect(t, w.Ask(t, "a", 5, "{}"), "1", "")
	crashes := w.Logs.Records("go panic in actor; the VM will be replaced")
	if len(crashes) != 1 || crashes[0]["stack"] == nil || crashes[0]["incident"] == nil || crashes[0]["panic"] != "recorder: response asked to panic" {
		t.Fatalf("crash lines %v, want one with the panic, its stack and an incident", crashes)
	}
	if got := w.Await(t, sleeping).Err.Message; !strings.Contains(got, crashes[0]["incident"].(string)) {
		t.Fatalf("the waiting task answered %q, not the crash's incident %v", got, crashes[0]["incident"])
	}
}
