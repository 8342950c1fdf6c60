package gen_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/internal/gen"
)

// TestRoomRoutesLeftOut: the routes the merge adds for rooms
// (docs/rooms.md §8.1) get no stubs: the SDKs' room API covers them.
func TestRoomRoutesLeftOut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "actors.yaml")
	src := "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: arena}\n" +
		"actors:\n  - name: arena\n    script: arena.lua\n    room: {}\n    rpc: {routes: [{id: 3002, name: ready, binding: ready}]}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"ts", "go", "cs"} {
		out := string(generate(t, file, gen.Options{Lang: lang, Source: "actors.yaml", Package: "game"}).Data)
		if !strings.Contains(out, "3002") || strings.Contains(out, "65520") || strings.Contains(out, "65522") {
			t.Errorf("%s: want route 3002 and no room route:\n%s", lang, out)
		}
	}
}
