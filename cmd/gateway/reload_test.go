package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestReloadCommand: gateway reload exits 0 after a reload that went
// through, and 1 after printing why when it failed, when the token is
// wrong, and when the admin API is off.
func TestReloadCommand(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	const game = `network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: svc}
  admin: {address: "127.0.0.1:0", token: t0ken}
actors:
  - name: svc
    script: svc.lua
    rpc: {routes: [{id: 1, name: hello, binding: hello, requires_auth: false}]}
`
	testutil.WriteFiles(t, dir, map[string]string{
		"game.yaml": game,
		"off.yaml":  strings.Replace(game, ", token: t0ken", "", 1),
		"svc.lua":   "local M = {}\nfunction M.hello() return 1 end\nreturn M",
	})
	start := func(name string) *bootstrap.Server {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv, err := bootstrap.Start(ctx, filepath.Join(dir, name), bootstrap.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Stop(context.Background()) })
		return srv
	}
	srv, off := start("game.yaml"), start("off.yaml")
	addr := srv.Admin.Addr()

	if code, out, errOut := gateway(t, "reload", "-admin", addr, "-token", "t0ken"); code != 0 || out != "reload ok\n" {
		t.Errorf("a good reload: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	testutil.WriteFile(t, filepath.Join(dir, "svc.lua"), "local M = {\n")
	code, _, errOut := gateway(t, "reload", "-admin", addr, "-token", "t0ken")
	if code != 1 || !strings.Contains(errOut, "reload failed:") || !strings.Contains(errOut, "svc.lua") {
		t.Errorf("a failed reload: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := gateway(t, "reload", "-admin", addr, "-token", "nope"); code != 1 || !strings.Contains(errOut, "401") {
		t.Errorf("a wrong token: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := gateway(t, "reload", "-admin", off.Admin.Addr(), "-token", "t0ken"); code != 1 || !strings.Contains(errOut, "404") {
		t.Errorf("the API off: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := gateway(t, "reload", "-admin", addr, "extra"); code != 2 {
		t.Errorf("an extra argument: exit %d, want 2", code)
	}
}
