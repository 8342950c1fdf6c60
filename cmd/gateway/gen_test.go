package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGen: gen writes the stubs of the example game into -o (creating
// it), names the Go package after the folder, and refuses a call without
// -lang and -o or with an unknown language.
func TestGen(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	schemas := filepath.Join("..", "..", "configs", "schemas")
	for _, c := range []struct{ lang, out, file, want string }{
		{"ts", filepath.Join(dir, "web", "shield"), "routes.ts", "export function joinRoom(client: Client, req: JoinRoomRequest"},
		{"go", filepath.Join(dir, "game-stubs"), "routes.go", "package gamestubs"},
		{"cs", filepath.Join(dir, "unity"), "Routes.cs", "public static async Task<JoinRoomResponse> JoinRoomAsync(this ShieldClient client, JoinRoomRequest req"},
	} {
		code, out, errOut := gateway(t, "gen", "-c", example, "-schemas", schemas, "-lang", c.lang, "-o", c.out)
		if code != 0 {
			t.Fatalf("gen -lang %s: exit %d, stderr:\n%s", c.lang, code, errOut)
		}
		path := filepath.Join(c.out, c.file)
		if strings.TrimSpace(out) != path {
			t.Errorf("gen -lang %s printed %q, want %q", c.lang, out, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), c.want) {
			t.Errorf("%s lacks %q:\n%.600s", path, c.want, data)
		}
	}
	for _, args := range [][]string{
		{"gen", "-c", example, "-lang", "ts"},
		{"gen", "-c", example, "-o", dir},
	} {
		if code, _, errOut := gateway(t, args...); code != 2 || !strings.Contains(errOut, "usage: gateway gen") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	if code, _, errOut := gateway(t, "gen", "-c", example, "-lang", "rust", "-o", dir); code != 1 || !strings.Contains(errOut, `unknown language "rust"`) {
		t.Errorf("-lang rust: exit %d, stderr %q", code, errOut)
	}
}
