package acceptance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/internal/wiretest"
)

// reloadArena is the room kind of TestRoomKindReload: its state says
// which code made it (%s) and the tick's dt.
const reloadArena = `local M = {}
function M.room_init(ctx, params) ctx.room.state.v = "%s" end
function M.room_tick(ctx, tick, inputs) ctx.room.state.dt = ctx.room.dt end
return M
`

// TestRoomKindReload is docs/rooms.md §2.5: a reload that changes a room
// kind's script and room block applies to the rooms made after it (a new
// generation of the kind); a live room keeps its code and its tick rate.
// A reload that changes nothing of the kind keeps its generation.
func TestRoomKindReload(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "arena.lua")
	write := func(version string) {
		if err := os.WriteFile(script, []byte(strings.Replace(reloadArena, "%s", version, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("v1")
	kind := func(hz int) string {
		return "  - name: arena\n    script: " + script + "\n    room: {tick_hz: " + map[int]string{20: "20", 10: "10"}[hz] + "}\n"
	}
	c := roomsConf{node: "gw-reload", timeout: 20 * time.Second, strict: true, kinds: kind(20)}
	s := wiretest.Start(t, "shield.yaml", c.yaml(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	t.Cleanup(cancel)
	g := &roomsRig{t: t, s: s, ctx: ctx, strict: true}
	reload := func() {
		t.Helper()
		if err := s.Srv.Reload(ctx); err != nil {
			t.Fatalf("reload: %v", err)
		}
	}
	gen := func() int { return s.Srv.Runtime.Generation("arena") }

	alice, bob := g.player("alice"), g.player("bob")
	old := g.makeOn(alice.c, "arena", nil)
	g.join(alice, old)

	reload() // nothing changed
	if gen() != 1 {
		t.Fatalf("a reload that changed nothing of arena: generation %d, want 1", gen())
	}

	write("v2")
	path := s.Srv.Report.Config.File
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(cfg), "tick_hz: 20", "tick_hz: 10", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	reload()
	if gen() != 2 {
		t.Fatalf("after the reload arena's generation is %d, want 2", gen())
	}
	s.Logs.WaitFor(t, "service reloaded", "service", "arena", "reason", "room")
	fresh := g.makeOn(bob.c, "arena", nil)
	g.join(bob, fresh)

	state := func(m *roomMember) (string, int64) {
		st, _ := m.state()
		v, _ := st["v"].(string)
		dt, _ := st["dt"].(int64)
		return v, dt
	}
	wiretest.Eventually(t, "each room ticks with its own code and rate", func() bool {
		v1, dt1 := state(alice)
		v2, dt2 := state(bob)
		return v1 == "v1" && dt1 == 50 && v2 == "v2" && dt2 == 100
	})
}
