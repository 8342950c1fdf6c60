package service_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
)

func heapBytes() uint64 { return testutil.RuntimeMetric("/memory/classes/heap/objects:bytes") }

// TestHeapLimit checks lua.heap_limit_bytes: a handler that grows the heap
// without bound is stopped with resource_exhausted, and the service
// serves the next request from the same VM (SPEC §6: the heap limit
// cancels runs, it never replaces a VM). The process survives each.
func TestHeapLimit(t *testing.T) {
	runtime.GC()
	limit := heapBytes() + 64<<20
	cases := []struct {
		name, body, want string
	}{
		{"a table growing forever", `local t = {} local i = 0 while true do i = i + 1 t[i] = { i } end`, "client_rpc.resource_exhausted"},
		{"big strings kept forever", `local t = {} while true do t[#t + 1] = string.rep("x", 2^20) .. #t end`, "client_rpc.resource_exhausted"},
		{"a string doubling", `local s = "ab" while true do s = s .. s end`, "client_rpc.resource_exhausted|client_rpc.timeout"},
		{"string.rep 2^40", `return #string.rep("a", 2^40)`, "client_rpc.resource_exhausted"},
		{"a global table growing", `grown = {} local i = 0 while true do i = i + 1 grown[i] = { i } end`, "client_rpc.resource_exhausted"},
	}
	var routes strings.Builder
	src := "local M = {}\nfunction M.ping() return true end\nfunction M.grown() return grown ~= nil end\n"
	for i, c := range cases {
		fmt.Fprintf(&routes, "\n      - {id: %d, binding: c%d}", i+1, i+1)
		src += fmt.Sprintf("function M.c%d(ctx, client, req)\n%s\nend\n", i+1, c.body)
	}
	routes.WriteString("\n      - {id: 100, binding: ping}\n      - {id: 102, binding: grown}")
	w := startWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML(fmt.Sprintf("lua: {heap_limit_bytes: %d}\n", limit),
			luatest.ActorYAML("a", "handler_timeout: 60s", routes.String()),
			luatest.ActorYAML("b", "", "\n      - {id: 101, binding: ping}")),
		"a.lua": src + "return M",
		"b.lua": `local M = {} function M.ping() return true end return M`,
	})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			// Growing 64 MiB takes a while under the race detector.
			r := w.AwaitFor(t, w.Send(t, "a", uint32(i+1), "{}"), time.Minute)
			if r.Err == nil || !strings.Contains(c.want, string(r.Err.Code)) {
				t.Fatalf("got %s %v, want %s", r.Body, r.Err, c.want)
			}
			t.Logf("%s after %v, heap %d MiB", r.Err.Code, time.Since(start).Round(time.Millisecond), heapBytes()>>20)
			// The service serves again, from the same VM: the global the
			// last case grew is still there.
			luatest.Expect(t, w.Ask(t, "a", 100, "{}"), "true", "")
			if c.name == "a global table growing" {
				luatest.Expect(t, w.Ask(t, "a", 102, "{}"), "true", "")
			}
			luatest.Expect(t, w.Ask(t, "b", 101, "{}"), "true", "")
		})
	}
	if w.metrics.get("b") != 0 || w.metrics.get("a") != 0 {
		t.Fatal("a VM was restarted")
	}
}
