package luavm_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/egress"
	"github.com/shieldrpc/shield/ingress"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/luavm"
)

// benchVM spawns a VM of src with route 1 bound to M.echo, and route 2
// too as forward_raw.
func benchVM(tb testing.TB, src string) *luavm.VM {
	tb.Helper()
	script := filepath.Join(tb.TempDir(), "a.lua")
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	vm, err := luavm.New(luavm.Spec{Service: "a", Script: script, Routes: []descriptor.Route{
		{ID: 1, Binding: "echo", Direction: config.C2S, Owner: "a", Action: config.DecodeLocal},
		{ID: 2, Binding: "echo", Direction: config.C2S, Owner: "a", Action: config.ForwardRaw}}})
	if err != nil {
		tb.Fatal(err)
	}
	return vm
}

const echoScript = `local M = {} function M.echo(ctx, client, req) return req end return M`

// BenchmarkHandleIngress is the VM's share of BenchmarkActorMessages: one
// request decoded, handled, encoded and answered, on one goroutine (the
// Lua round trip; allocs/op counts the ClientIngress the benchmark makes
// too).
func BenchmarkHandleIngress(b *testing.B) { benchIngress(b, 1) }

// BenchmarkHandleIngressRaw is BenchmarkHandleIngress on a forward_raw
// route: the body reaches the handler as a string and goes back as it is.
func BenchmarkHandleIngressRaw(b *testing.B) { benchIngress(b, 2) }

// BenchmarkHandleIngressLazy is BenchmarkHandleIngress for a handler
// that takes no req (function(ctx, client)): with lazy_decode its JSON
// body is not decoded into a table.
func BenchmarkHandleIngressLazy(b *testing.B) {
	for _, lazy := range []bool{false, true} {
		b.Run(map[bool]string{false: "lazy_decode=false", true: "lazy_decode=true"}[lazy], func(b *testing.B) {
			script := filepath.Join(b.TempDir(), "a.lua")
			src := `local M = {} function M.ok(ctx, client) return "ok" end return M`
			if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
				b.Fatal(err)
			}
			vm, err := luavm.New(luavm.Spec{Service: "a", Script: script, Routes: []descriptor.Route{
				{ID: 1, Binding: "ok", Direction: config.C2S, Owner: "a", Action: config.DecodeLocal, LazyDecode: lazy}}})
			if err != nil {
				b.Fatal(err)
			}
			defer vm.Close()
			runIngress(b, vm, 1)
		})
	}
}

func benchIngress(b *testing.B, route uint32) {
	vm := benchVM(b, echoScript)
	defer vm.Close()
	runIngress(b, vm, route)
}

func runIngress(b *testing.B, vm *luavm.VM, route uint32) {
	h := &host{}
	vm.Attach(h)
	body := []byte(`{"x":12,"y":-3,"name":"hero"}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		vm.HandleIngress(&ingress.ClientIngress{Client: ingress.ClientContext{
			Ref: egress.ClientRef{SessionID: 1, Epoch: 1, Gateway: "gw"}, RouteID: route, RequestID: uint64(i + 1)},
			Body: body, Codec: "json"})
		if len(h.resp) > 1024 {
			h.resp = h.resp[:0]
		}
	}
}

// vmBytes spawns n VMs of src (each after serving one request, if served)
// and returns the heap they hold, per VM.
func vmBytes(tb testing.TB, n int, served bool) float64 {
	var before, after runtime.MemStats
	vms := make([]*luavm.VM, n)
	// Twice: gopher-lua keeps call stack segments in a sync.Pool, which a
	// single collection only moves to its victim cache.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range vms {
		vms[i] = benchVM(tb, echoScript)
		if served {
			vms[i].Attach(&host{})
			vms[i].HandleIngress(&ingress.ClientIngress{Client: luatest.Client(1, 1), Body: []byte(`{}`), Codec: "json"})
		}
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, vm := range vms {
		vm.Close()
	}
	runtime.KeepAlive(vms)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// BenchmarkVMMemory reports the heap a freshly spawned VM holds.
func BenchmarkVMMemory(b *testing.B) {
	var fresh, served float64
	for i := 0; i < b.N; i++ {
		fresh += vmBytes(b, 100, false)
		served += vmBytes(b, 100, true)
	}
	b.ReportMetric(fresh/float64(b.N)/1024, "KiB/VM")
	b.ReportMetric(served/float64(b.N)/1024, "KiB/VM-served")
}

// TestVMMemory holds a fresh VM to the 400 KiB.
func TestVMMemory(t *testing.T) {
	if per := vmBytes(t, 100, false); per > 400<<10 {
		t.Fatalf("a fresh VM holds %.0f KiB", per/1024)
	}
}
