package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/internal/testutil"
)

// TestMain runs the tests, or, in a process gateway bench started as its
// gateway (childEnv set), the command line it was given: under go test,
// os.Executable is this test binary.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// noLeak fails t if more goroutines run after the test than before it
// (testutil.CheckGoroutines, under this package's name).
func noLeak(t testing.TB) {
	t.Helper()
	testutil.CheckGoroutines(t)
}

// gateway runs the command line in-process and returns its exit status
// and outputs.
func gateway(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// example is the example game, relative to this package's folder.
var example = filepath.Join("..", "..", "configs", "actors.yaml")

// TestCheckExample: check prints the descriptor table, one row a route in
// id order with every column the issue names, then a summary, and exits 0.
func TestCheckExample(t *testing.T) {
	noLeak(t)
	code, out, errOut := gateway(t, "check", "-c", example)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	rows := table(t, lines)
	want := []map[string]string{
		{"ID": "1001", "NAME": "login", "DIRECTION": "c2s", "OWNER": "auth", "BINDING": "login", "REQUIRES_AUTH": "false", "ACTION": "decode_local"},
		{"ID": "2001", "NAME": "move", "DIRECTION": "c2s", "OWNER": "player", "BINDING": "move", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "2002", "NAME": "join_room", "DIRECTION": "c2s", "OWNER": "player", "BINDING": "join_room", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "2003", "NAME": "profile", "DIRECTION": "c2s", "OWNER": "player", "BINDING": "profile", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "2004", "NAME": "play", "DIRECTION": "c2s", "OWNER": "player", "BINDING": "play", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "2005", "NAME": "cancel_play", "DIRECTION": "c2s", "OWNER": "player", "BINDING": "cancel_play", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "2101", "NAME": "position", "DIRECTION": "s2c", "OWNER": "room", "BINDING": "position", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "2102", "NAME": "left", "DIRECTION": "s2c", "OWNER": "room", "BINDING": "left", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		// A room's input route has no handler, nor have Shield's own.
		{"ID": "2201", "NAME": "arena_move", "DIRECTION": "c2s", "OWNER": "arena", "BINDING": "-", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "65520", "NAME": "shield.room.state", "DIRECTION": "s2c", "OWNER": "shield", "BINDING": "-", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "65521", "NAME": "shield.room.sync", "DIRECTION": "c2s", "OWNER": "shield", "BINDING": "-", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "65522", "NAME": "shield.room.join", "DIRECTION": "c2s", "OWNER": "shield", "BINDING": "-", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "65523", "NAME": "shield.room.leave", "DIRECTION": "c2s", "OWNER": "shield", "BINDING": "-", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
		{"ID": "65524", "NAME": "shield.match", "DIRECTION": "s2c", "OWNER": "shield", "BINDING": "-", "REQUIRES_AUTH": "true", "ACTION": "decode_local"},
	}
	wantRows(t, rows, want, out)
	if got := lines[len(lines)-1]; got != example+": ok: 14 routes, 4 actors, 4 VMs compiled" {
		t.Errorf("summary line = %q", got)
	}
}

// table parses the route table at the top of lines: the header, then a row
// a line up to the first empty line. It checks that the columns the issue
// asks for are there and that each row's fields start under their header.
func table(t testing.TB, lines []string) []map[string]string {
	t.Helper()
	header := lines[0]
	cols := strings.Fields(header)
	for _, c := range []string{"ID", "NAME", "DIRECTION", "OWNER", "BINDING", "REQUIRES_AUTH", "ACTION"} {
		if !slices.Contains(cols, c) {
			t.Fatalf("header %q has no column %s", header, c)
		}
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		if line == "" {
			break
		}
		fields := strings.Fields(line)
		if len(fields) != len(cols) {
			t.Fatalf("row %q has %d fields, the header %d", line, len(fields), len(cols))
		}
		row := map[string]string{}
		for i, c := range cols {
			at := strings.Index(header, c)
			if !strings.HasPrefix(line[at:], fields[i]) {
				t.Errorf("row %q: %s does not start under its header", line, c)
			}
			row[c] = fields[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// TestCheckBroken: a config broken in layer 1 and layer 2 prints every
// error of both, then a count, on stderr, and exits 1.
func TestCheckBroken(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "game.yaml")
	testutil.WriteFile(t, path, `network:
  listeners:
    - {name: game, address: ":7000", entry_service: auth, transport: udp}
actors:
  - name: auth
    script: auth.lua
    rpc:
      routes:
        - {id: 1001, name: login, bindng: login}
        - {id: 16777216, name: big, binding: big}
  - name: lobby
    script: lobby.lua
    rpc:
      routes:
        - {id: 1001, name: enter, binding: enter}
        - {id: 1002, name: login, binding: login, owner_service: hall}
`)
	testutil.WriteFile(t, filepath.Join(dir, "auth.lua"), "return {}\n")
	code, out, errOut := gateway(t, "check", "-c", path)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
	want := []string{
		path + `:3: network.listeners[0].transport: "udp" is not one of tcp, ws`,
		path + `:9: actor "auth": route 1001 (login): route: unknown key "bindng" (did you mean "binding"?)`,
		path + `:9: actor "auth": route 1001 (login): binding is required`,
		path + `:10: actor "auth": route 16777216 (big): id: 16777216 is out of range 1..16777215`,
		path + `:15: actor "lobby": route 1001 (enter): rpc route conflict: id 1001 is declared by actor "auth" (line 9) and actor "lobby" (line 15)`,
		path + `:16: actor "lobby": route 1002 (login): rpc route conflict: name login is declared by actor "auth" (line 9) and actor "lobby" (line 16)`,
		path + `:16: actor "lobby": route 1002 (login): owner_service "hall" is not an actor`,
		path + `: 7 error(s)`,
	}
	if got := strings.Split(strings.TrimRight(errOut, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, strings.Join(want, "\n"))
	}
}

// TestCheckScriptError: a layer-3 error also exits 1, naming the script.
func TestCheckScriptError(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "game.yaml")
	testutil.WriteFile(t, path, "network:\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth}\nactors:\n  - {name: auth, script: auth.lua, rpc: {routes: [{id: 1, name: login, binding: login}]}}\n")
	testutil.WriteFile(t, filepath.Join(dir, "auth.lua"), "return {}\n")
	code, _, errOut := gateway(t, "check", "-c", path)
	if code != 1 || !strings.Contains(errOut, "client_rpc.handler_missing") || !strings.Contains(errOut, filepath.Join(dir, "auth.lua")) {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestCheckMissingFile(t *testing.T) {
	noLeak(t)
	path := filepath.Join(t.TempDir(), "nope.yaml")
	code, _, errOut := gateway(t, "check", "-c", path)
	if code != 1 || !strings.Contains(errOut, path+": cannot read configuration") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestUnknownCommand(t *testing.T) {
	noLeak(t)
	code, out, errOut := gateway(t, "serve")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if out != "" || !strings.Contains(errOut, `gateway: unknown command "serve"`) || !strings.Contains(errOut, "usage:") {
		t.Errorf("stdout %q, stderr:\n%s", out, errOut)
	}
}

func TestCheckBadFlag(t *testing.T) {
	noLeak(t)
	code, _, errOut := gateway(t, "check", "-x")
	if code != 2 || !strings.Contains(errOut, "flag provided but not defined: -x") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestHelp(t *testing.T) {
	noLeak(t)
	code, out, _ := gateway(t, "help")
	if code != 0 || !strings.Contains(out, "gateway check [-c FILE]") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
}

// TestRoutesCommand: `gateway routes` prints the merged route table from
// layers 1 and 2 alone (no VM, so scripts need not exist), with each
// route's codec, and exits 1 naming both declarations of a conflict.
func TestRoutesCommand(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	const cfg = `node: {name: rt}
network:
  listeners:
    - {name: game, address: "127.0.0.1:0", entry_service: a}
actors:
  - name: a
    script: missing.lua
    rpc:
      routes:
        - {id: 1, name: hello, binding: hello, requires_auth: false}
  - name: b
    script: missing-too.lua
    rpc:
      routes:
        - {id: %d, name: ping, binding: ping}
`
	write := func(name string, id int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(fmt.Sprintf(cfg, id)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, out, errOut := gateway(t, "routes", "-c", write("ok.yaml", 2))
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	rows := table(t, strings.Split(strings.TrimRight(out, "\n"), "\n"))
	want := []map[string]string{
		{"ID": "1", "NAME": "hello", "DIRECTION": "c2s", "OWNER": "a", "BINDING": "hello", "REQUIRES_AUTH": "false", "ACTION": "decode_local", "CODEC": "json"},
		{"ID": "2", "NAME": "ping", "DIRECTION": "c2s", "OWNER": "b", "BINDING": "ping", "REQUIRES_AUTH": "true", "ACTION": "decode_local", "CODEC": "json"},
	}
	wantRows(t, rows, want, out)
	bad := write("conflict.yaml", 1)
	code, out, errOut = gateway(t, "routes", "-c", bad)
	if code != 1 || out != "" {
		t.Fatalf("a conflict: exit %d, stdout %q", code, out)
	}
	for _, s := range []string{`rpc route conflict: id 1 is declared by actor "a" (line 10) and actor "b" (line 15)`, bad + ": 1 error(s)"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, errOut)
		}
	}
}

// TestREADMECheckOutput: the README shows `gateway check`'s output for the
// example game as it really is, byte for byte (a newcomer compares it).
func TestREADMECheckOutput(t *testing.T) {
	noLeak(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const intro = "`go run ./cmd/gateway check` prints the compiled route table:\n\n"
	_, after, ok := strings.Cut(string(readme), intro)
	if !ok {
		t.Fatalf("README has no %q", intro)
	}
	var shown []string
	for _, line := range strings.Split(after, "\n") {
		if line != "" && !strings.HasPrefix(line, "    ") {
			break
		}
		shown = append(shown, strings.TrimPrefix(line, "    "))
	}
	code, out, errOut := gateway(t, "check", "-c", example)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	got := strings.ReplaceAll(out, example, "configs/actors.yaml")
	if want := strings.TrimRight(strings.Join(shown, "\n"), "\n") + "\n"; got != want {
		t.Errorf("README shows:\n%s\ncheck prints:\n%s", want, got)
	}
}

// wantRows checks a printed table's rows column by column (columns not in
// want are not checked).
func wantRows(t *testing.T, rows, want []map[string]string, out string) {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out)
	}
	for i, w := range want {
		for col, v := range w {
			if rows[i][col] != v {
				t.Errorf("row %d column %s = %q, want %q", i, col, rows[i][col], v)
			}
		}
	}
}
