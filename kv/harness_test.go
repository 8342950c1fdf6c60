package kv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
	"github.com/shieldrpc/shield/luavm"
	"github.com/shieldrpc/shield/service"
)

func TestMain(m *testing.M) { os.Exit(testutil.CheckGoroutinesMain(m, "kv")) }

// These tests run real scripts in real VMs on a real embedded JetStream
// (file storage, in a temp data_dir); the only fake is the gateway, which
// records what the services send it (luatest's world).

// quiet is a logger that drops everything.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// mustJSON decodes b into v or fails t.
func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// luaCase is one handler and what its request must answer.
type luaCase struct {
	name string
	body string // the body of function(ctx, client, req)
	want string // the response body, or an error code
	msg  string // a regexp for the error message
}

// storageYAML is a storage block: data_dir (empty: the default, beside the
// config in the world's temp dir) and bucket entries.
func storageYAML(dataDir string, buckets ...string) string {
	var b strings.Builder
	b.WriteString("storage:\n")
	if dataDir != "" {
		fmt.Fprintf(&b, "  data_dir: %q\n", dataDir)
	}
	b.WriteString("  buckets:\n")
	for _, bk := range buckets {
		b.WriteString("    - " + bk + "\n")
	}
	return b.String()
}

// caseWorld starts a world whose actor a has the cases as routes 1..n,
// with prelude run before the module is returned (M in scope).
func caseWorld(t *testing.T, top, actorOpts, prelude string, cases []luaCase) *luatest.World {
	t.Helper()
	var routes, src strings.Builder
	src.WriteString("local M = {}\n" + prelude + "\n")
	for i, c := range cases {
		fmt.Fprintf(&routes, "\n      - {id: %d, name: c%d, binding: c%d}", i+1, i+1, i+1)
		fmt.Fprintf(&src, "-- %s\nfunction M.c%d(ctx, client, req)\n%s\nend\n", c.name, i+1, c.body)
	}
	src.WriteString("return M\n")
	return luatest.StartWorld(t, map[string]string{
		"actors.yaml": luatest.ConfigYAML(top, luatest.ActorYAML("a", actorOpts, routes.String())),
		"a.lua":       src.String(),
	}, luatest.Options{})
}

// runCases runs each case against actor a as a subtest, in order.
func runCases(t *testing.T, w *luatest.World, cases []luaCase) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			luatest.Expect(t, w.Ask(t, "a", uint32(i+1), "{}"), c.want, c.msg)
		})
	}
}

// stopWorld stops a world's runtime now (its cleanup's Stop is then a
// no-op), closing its store: a restart can open the same data_dir.
func stopWorld(t *testing.T, w *luatest.World) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Runtime.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// storeWorld runs actor a (script, whose routes 1..n are bindings r1..rn)
// over a store the test made: a world without bootstrap, for wrapping the
// store. The test owns the store's life; the runtime is stopped, and
// goroutines checked, at cleanup.
func storeWorld(t *testing.T, store luavm.KV, handlerTimeout time.Duration, routes int, script string) *luatest.World {
	t.Helper()
	testutil.CheckGoroutines(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "a.lua")
	testutil.WriteFile(t, path, script)
	spec := luavm.Spec{Service: "a", Script: path, HandlerTimeout: handlerTimeout, KV: store,
		Logger: quiet()}
	for i := 1; i <= routes; i++ {
		spec.Routes = append(spec.Routes, descriptor.Route{ID: uint32(i), Name: fmt.Sprintf("r%d", i), Binding: fmt.Sprintf("r%d", i),
			Direction: config.C2S, Owner: "a", Action: config.DecodeLocal})
	}
	rt, err := service.New([]service.Actor{{Name: "a", Mailbox: 64, VMs: []luavm.Spec{spec}}}, service.Options{Logger: spec.Logger})
	if err != nil {
		t.Fatal(err)
	}
	rec := luatest.NewRecorder()
	rt.SetSink(rec)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	w := &luatest.World{Runtime: rt, Gateway: rec, Dir: dir}
	w.Next.Store(1000)
	return w
}
