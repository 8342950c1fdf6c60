package luavm

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/shieldrpc/shield/codes"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
)

// answers is a Host and gateway that records the answers a VM sends.
type answers struct{ resp []*egress.Response }

func (h *answers) Self() egress.ActorID { return egress.ActorID{Service: "a"} }
func (h *answers) Pick(s, _ string) (egress.ActorID, *codes.Error) {
	return egress.ActorID{Service: s}, nil
}
func (h *answers) Route(*Call) *codes.Error                         { return nil }
func (h *answers) Return(*Result)                                   {}
func (h *answers) Sink() egress.Sink                                { return h }
func (h *answers) Respond(r *egress.Response)                       { h.resp = append(h.resp, r) }
func (h *answers) Push(p *egress.Push) []codes.Code                 { return make([]codes.Code, len(p.Targets)) }
func (h *answers) Bind(_ *egress.BindRequest, done egress.BindDone) { done(egress.ClientRef{}, nil) }
func (h *answers) Kick(egress.ClientRef, string) *codes.Error       { return nil }

// TestGoPanicOutOfResumeIsAnswered checks that a Go panic that gopher-lua
// lets out of Resume (here: the resume of a "normal" thread, with the check
// that now refuses it turned off) still answers the request that was in
// the VM, with handler_failed and an incident, and marks the VM crashed.
// Before, the panic unwound into the actor, which replaced the VM, and the
// request never got an answer.
func TestGoPanicOutOfResumeIsAnswered(t *testing.T) {
	refuseNormal = false
	defer func() { refuseNormal = true }()
	dir := t.TempDir()
	script := filepath.Join(dir, "a.lua")
	src := `local M = {}
function M.go(ctx, client, req)
  local me = coroutine.running()
  pcall(function() coroutine.resume(me) end)
  return "survived"
end
return M`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	vm, err := New(Spec{Service: "a", Script: script, Routes: []descriptor.Route{
		{ID: 1, Binding: "go", Direction: config.C2S, Owner: "a", Action: config.DecodeLocal}}})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	h := &answers{}
	vm.Attach(h)
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("panic left the VM: %v", r)
			}
		}()
		vm.HandleIngress(&ingress.ClientIngress{Client: ingress.ClientContext{RouteID: 1, RequestID: 9}, Body: []byte("{}"), Codec: "json"})
	}()
	if len(h.resp) != 1 || h.resp[0].Err == nil || h.resp[0].Err.Code != codes.HandlerFailed ||
		!regexp.MustCompile(`^internal error \(incident [0-9a-f]{16}\)$`).MatchString(h.resp[0].Err.Message) {
		t.Fatalf("answers: %+v", h.resp)
	}
	if !vm.Crashed() {
		t.Fatal("the VM is not marked for replacement")
	}
}
