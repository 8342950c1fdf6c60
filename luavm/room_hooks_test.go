package luavm_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/internal/luatest"
	"github.com/shieldrpc/shield/internal/testutil"
)

// roomForbiddenHooks are the ordinary hooks a room module must not define
// (docs/rooms.md §3.3), in the order the contract lists them.
var roomForbiddenHooks = []string{"init", "stop", "reload_save", "reload_load", "client_bound",
	"client_suspended", "client_resumed", "client_disconnected"}

// roomHookMessage is layer 3's message for a room module defining hook.
func roomHookMessage(hook string) string {
	return "room service module defines " + hook + ": rooms use room_join, room_suspended, room_resumed and room_leave"
}

// compileRoomKind compiles a config whose actor "a" is an ordinary actor
// (aLua) and whose actor "arena" is a room kind (arenaLua), as a start
// does (layers 1 to 3), and returns the compile's error, if any, and the
// path of arena's script as the error names it. A failed compile leaves
// no goroutine behind.
func compileRoomKind(t *testing.T, aLua, arenaLua string) (script string, err error) {
	t.Helper()
	testutil.CheckGoroutines(t)
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"actors.yaml": luatest.ConfigYAML("",
			luatest.ActorYAML("a", "", "\n        - {id: 1, name: go, binding: go, requires_auth: false}"),
			luatest.ActorYAML("arena", "room: {tick_hz: 20}", "")),
		"a.lua":     aLua,
		"arena.lua": arenaLua,
	})
	rep, err := bootstrap.Compile(filepath.Join(dir, "actors.yaml"), bootstrap.Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		rep.Close()
	}
	return filepath.Join(dir, "arena.lua"), err
}

// plainActor is actor "a": a handler and every hook a room may not
// define, which an ordinary actor may.
const plainActor = `local M = {}
function M.go(ctx, client, req) return true end
function M.init(ctx) end
function M.stop(ctx) end
function M.reload_save(ctx) return {} end
function M.reload_load(ctx, saved) end
function M.client_bound(ctx, client, from) end
function M.client_suspended(ctx, client) end
function M.client_resumed(ctx, client) end
function M.client_disconnected(ctx, client, reason) end
return M`

// roomModule is a room kind's module with every room hook (§4.1),
// draining (which runs in rooms) and methods whose names merely start
// like a forbidden hook, plus extra.
func roomModule(extra string) string {
	return `local M = {}
function M.room_init(ctx, params) end
function M.room_join(ctx, client, meta, seat) return true end
function M.room_leave(ctx, member, reason) end
function M.room_suspended(ctx, member) end
function M.room_resumed(ctx, member) end
function M.room_tick(ctx, tick, inputs) end
function M.room_seat_released(ctx, player_id, reason) end
function M.room_close(ctx, reason) end
function M.draining(ctx) end
function M.init_board(ctx) end
function M.client_bound_count(ctx) return 0 end
` + extra + `
return M`
}

// TestRoomModuleHooks is docs/rooms.md §15's layer 3 row (§3.3): a room
// kind's module that defines any of init, stop, reload_save,
// reload_load, client_bound, client_suspended, client_resumed or
// client_disconnected fails the compile with the exact message `room
// service module defines <hook>: rooms use room_join, room_suspended,
// room_resumed and room_leave`, prefixed with the script and the actor;
// several such hooks are each reported; the room hooks, draining and
// look-alike method names compile; and an ordinary actor may still
// define every one of those hooks.
func TestRoomModuleHooks(t *testing.T) {
	for _, hook := range roomForbiddenHooks {
		t.Run(hook, func(t *testing.T) {
			script, err := compileRoomKind(t, plainActor, roomModule("function M."+hook+"(ctx, ...) end"))
			if err == nil {
				t.Fatalf("a room module defining %s compiled", hook)
			}
			want := script + `: actor "arena": ` + roomHookMessage(hook)
			if got := err.Error(); got != want {
				t.Fatalf("error\n%s\nwant\n%s", got, want)
			}
		})
	}
	t.Run("every one", func(t *testing.T) {
		var defs strings.Builder
		for _, hook := range roomForbiddenHooks {
			defs.WriteString("function M." + hook + "(ctx, ...) end\n")
		}
		script, err := compileRoomKind(t, plainActor, roomModule(defs.String()))
		if err == nil {
			t.Fatal("a room module defining every forbidden hook compiled")
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(roomForbiddenHooks) {
			t.Fatalf("%d lines, want one per hook (%d):\n%s", len(lines), len(roomForbiddenHooks), err)
		}
		for _, hook := range roomForbiddenHooks {
			want := script + `: actor "arena": ` + roomHookMessage(hook)
			found := false
			for _, l := range lines {
				found = found || l == want
			}
			if !found {
				t.Errorf("no line %q in\n%s", want, err)
			}
		}
	})
	t.Run("allowed", func(t *testing.T) {
		if _, err := compileRoomKind(t, plainActor, roomModule("")); err != nil {
			t.Fatalf("a room module with the room hooks, draining and look-alike methods: %v", err)
		}
	})
}
