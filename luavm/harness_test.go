package luavm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/internal/luatest"
)

// These tests run real scripts in real VMs under the real runtime; the only
// fake is the gateway, which records what the services send it. The world,
// the recording gateway and the YAML builders are luatest's, shared with
// package service; the case tables below are this package's own.

// startWorld writes files (name -> content; "actors.yaml" is the config),
// compiles and starts them. At cleanup it stops the runtime and checks that
// no goroutine was left behind.
func startWorld(t testing.TB, files map[string]string) *luatest.World {
	t.Helper()
	return luatest.StartWorld(t, files, luatest.Options{})
}

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
	return luatest.ActorYAML(name, opts, routes.String()), src.String()
}

type yamlBlock = string

// runCases runs each case against target as a subtest.
func runCases(t *testing.T, w *luatest.World, target string, cases []luaCase) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.req
			if req == "" {
				req = "{}"
			}
			luatest.Expect(t, w.Ask(t, target, uint32(i+1), req), c.want, c.msg)
		})
	}
}
