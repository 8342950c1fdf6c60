package bootstrap_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/codec"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/descriptor"
)

// codecGame is the example game's routes (configs/actors.yaml) under
// listeners given as YAML flow mappings, with extra routes for the probe
// actor; scripts are never loaded here.
func codecGame(listeners, schemasDir, extraRoutes string) string {
	dir := ""
	if schemasDir != "" {
		dir = "  schemas_dir: " + schemasDir + "\n"
	}
	return fmt.Sprintf(`network:
  listeners:
%s%sactors:
  - name: auth
    script: auth.lua
    rpc: {routes: [{id: 1001, name: login, binding: login, requires_auth: false}]}
  - name: player
    script: player.lua
    rpc:
      routes:
        - {id: 2001, name: move, binding: move}
        - {id: 2002, name: join_room, binding: join_room}
        - {id: 2101, name: position, binding: position, direction: s2c, owner_service: room}
  - name: room
    script: room.lua
  - name: probe
    script: probe.lua
    rpc:
      routes:
%s`, listeners, dir, extraRoutes)
}

// setupCodecs parses cfgYAML as a config in a fresh folder, merges it and
// runs SetupCodecs.
func setupCodecs(t *testing.T, cfgYAML string) (*codec.Schemas, *config.Config, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "actors.yaml")
	cfg, errs := config.Parse(file, []byte(cfgYAML))
	if len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	table, merrs := descriptor.Merge(cfg)
	if len(merrs) > 0 {
		t.Fatalf("merge: %v", merrs)
	}
	s, err := bootstrap.SetupCodecs(cfg, table)
	return s, cfg, err
}

func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const noExtraRoutes = "        - {id: 9001, name: probe_echo, binding: echo, action: forward_raw}\n"

// TestSetupCodecsExampleGame: the example game's .pb holds a message for
// every route, registered under the listener's key, and its schemas
// compile for the json listener.
func TestSetupCodecsExampleGame(t *testing.T) {
	listeners := fmt.Sprintf(`    - {name: web, address: "127.0.0.1:0", entry_service: auth}
    - {name: unity, address: "127.0.0.1:0", entry_service: auth, protocol: {body: protobuf, descriptor_set: %s}}
    - {name: unreal, address: "127.0.0.1:0", entry_service: auth, protocol: {body: protobuf, descriptor_set: %[1]s}}
`, repoPath(t, "configs/proto/game.pb"))
	s, cfg, err := setupCodecs(t, codecGame(listeners, repoPath(t, "configs/schemas"), noExtraRoutes))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{1001, 2001, 2002} {
		if !s.Has(id) {
			t.Errorf("route %d has no schema", id)
		}
	}
	if s.Has(2101) || s.Has(9001) {
		t.Error("an s2c or forward_raw route has a schema")
	}
	for _, key := range []string{"protobuf/unity", "protobuf/unreal"} {
		c, ok := codec.Lookup(key)
		if !ok || c.Name() != key {
			t.Fatalf("%s not registered", key)
		}
		L := lua.NewState()
		v, err := c.Decode(L, "move", []byte{0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}) // x = 1.0
		if err != nil || v.(*lua.LTable).RawGetString("x") != lua.LNumber(1) {
			t.Errorf("%s: decoded %v, %v", key, v, err)
		}
		L.Close()
	}
	if got := strings.Join(cfg.BodyCodecKeys(), " "); got != "json protobuf/unity protobuf/unreal" {
		t.Errorf("codec keys %q", got)
	}
	if err := s.Validate(2001, []byte(`{"x":"far","y":1}`)); err == nil || !strings.HasSuffix(err.Error(), "/x: expected number, but got string") {
		t.Errorf("bad move: %v", err)
	}
}

// TestSetupCodecsNoJSONListener: schemas apply to json listeners only.
func TestSetupCodecsNoJSONListener(t *testing.T) {
	listeners := fmt.Sprintf("    - {name: pb, address: \"127.0.0.1:0\", entry_service: auth, protocol: {body: protobuf, descriptor_set: %s}}\n",
		repoPath(t, "configs/proto/game.pb"))
	s, _, err := setupCodecs(t, codecGame(listeners, repoPath(t, "configs/schemas"), noExtraRoutes))
	if err != nil || s != nil {
		t.Fatalf("schemas %v, error %v", s, err)
	}
}

// TestSetupCodecsErrors: every problem at once, each naming its route (or
// listener), its line and the file or message at fault; and nothing is
// registered.
func TestSetupCodecsErrors(t *testing.T) {
	dir := t.TempDir()
	schemas := filepath.Join(dir, "schemas")
	if err := os.MkdirAll(schemas, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(schemas, "move.json"), []byte(`{"type": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.pb")
	if err := os.WriteFile(garbage, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	game := repoPath(t, "configs/proto/game.pb")
	listeners := fmt.Sprintf(`    - {name: web, address: "127.0.0.1:0", entry_service: auth}
    - {name: pb1, address: "127.0.0.1:0", entry_service: auth, protocol: {body: protobuf, descriptor_set: %s}}
    - {name: pb2, address: "127.0.0.1:0", entry_service: auth, protocol: {body: protobuf, descriptor_set: %s}}
`, game, garbage)
	extra := `        - {id: 9001, name: probe_stats, binding: stats}
        - {id: 9002, binding: anonymous, request_schema: shield.Stats}
        - {id: 9003, name: probe_raw, binding: raw, action: forward_raw}
        - {id: 9004, name: probe_dropped, binding: dropped, action: drop}
        - {id: 9005, name: probe_bidi_raw, binding: bidi_raw, direction: bidi, action: forward_raw}
`
	_, _, err := setupCodecs(t, codecGame(listeners, schemas, extra))
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v is not config.Errors", err)
	}
	text := err.Error()
	for _, want := range []string{
		`actors.yaml:15: actor "player": route 2001 (move): request schema ` + filepath.Join(schemas, "move.json") + `: `,
		`actors.yaml:24: actor "probe": route 9001 (probe_stats): listener "pb1" has body protobuf: message "probe_stats" is not in descriptor set ` + game,
		`actors.yaml:25: actor "probe": route 9002: listener "pb1" has body protobuf: message "shield.Stats" is not in descriptor set ` + game,
		// SPEC §2: an explicit request_schema with no file fails the start,
		// even when it names a protobuf message for another listener.
		`actors.yaml:25: actor "probe": route 9002: request schema ` + filepath.Join(schemas, "shield.Stats.json") + `: file does not exist`,
		`actors.yaml:28: actor "probe": route 9005 (probe_bidi_raw): listener "pb1" has body protobuf: message "probe_bidi_raw" is not in descriptor set`,
		`listener "pb2": descriptor set ` + garbage + `: not a FileDescriptorSet`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if len(errs) != 6 {
		t.Errorf("%d errors, want 6:\n%s", len(errs), text)
	}
	for _, e := range errs {
		if !strings.HasSuffix(e.File, "actors.yaml") || e.Line == 0 {
			t.Errorf("error without file:line: %v", e)
		}
	}
	for _, name := range []string{"protobuf/pb1", "protobuf/pb2"} {
		if _, ok := codec.Lookup(name); ok {
			t.Errorf("%s registered by a failed setup", name)
		}
	}
}

// TestSetupCodecsUnusedSchema: an explicit request_schema that nothing
// would use fails the start naming the route and what to do, instead of
// being skipped in silence; where a protobuf listener encodes the route's
// bodies with that message, it is used and accepted.
func TestSetupCodecsUnusedSchema(t *testing.T) {
	web := "    - {name: web, address: \"127.0.0.1:0\", entry_service: auth}\n"
	pb := fmt.Sprintf("    - {name: pb, address: \"127.0.0.1:0\", entry_service: auth, protocol: {body: protobuf, descriptor_set: %s}}\n",
		repoPath(t, "configs/proto/game.pb"))
	for _, tc := range []struct {
		name, listeners, route, want string
	}{
		{"forward_raw", web, "{id: 9001, name: probe_raw, binding: raw, action: forward_raw, request_schema: move}",
			`actors.yaml:21: actor "probe": route 9001 (probe_raw): request_schema "move" is never used: the route's action is forward_raw (its handler gets the raw body), so no schema applies to its requests; remove request_schema, or use action decode_local to have requests decoded and validated`},
		{"raw codec", web, "{id: 9001, name: probe_raw, binding: raw, request_codec: raw, request_schema: move}",
			`actors.yaml:21: actor "probe": route 9001 (probe_raw): request_schema "move" is never used: the route's request_codec is "raw" (its handler gets the raw body), so no schema applies to its requests; remove request_schema, or set request_codec to json (or leave it empty) to have requests decoded and validated`},
		{"drop", web, "{id: 9001, name: probe_raw, binding: raw, action: drop, request_schema: move}",
			`actors.yaml:21: actor "probe": route 9001 (probe_raw): request_schema "move" is never used: the route's action is drop (the gateway drops its frames), so no schema applies to its requests; remove request_schema`},
		{"s2c", web, "{id: 9001, name: probe_raw, binding: raw, direction: s2c, request_schema: move}",
			`actors.yaml:21: actor "probe": route 9001 (probe_raw): request_schema "move" is never used: the route is s2c (clients send it no request), so no schema applies to its requests; remove request_schema`},
		// A protobuf listener encodes a raw-codec route's responses with
		// the message request_schema names: it is used.
		{"raw codec on protobuf", pb, "{id: 9001, name: probe_raw, binding: raw, request_codec: raw, request_schema: move}", ""},
		// A client-to-server forward_raw route's bodies never meet the
		// protobuf codec: unused there too.
		{"forward_raw on protobuf", pb, "{id: 9001, binding: raw, action: forward_raw, request_schema: move}",
			`actors.yaml:21: actor "probe": route 9001: request_schema "move" is never used`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := setupCodecs(t, codecGame(tc.listeners, "", "        - "+tc.route+"\n"))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("no error, want %q", tc.want)
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error\n%v\nwant it to contain\n%s", err, tc.want)
			}
		})
	}
}

// TestSetupCodecsMissingSchemasDir: a schemas_dir that is not there fails
// the start.
func TestSetupCodecsMissingSchemasDir(t *testing.T) {
	listeners := "    - {name: web, address: \"127.0.0.1:0\", entry_service: auth}\n"
	_, _, err := setupCodecs(t, codecGame(listeners, filepath.Join(t.TempDir(), "none"), noExtraRoutes))
	if err == nil || !strings.Contains(err.Error(), "network.schemas_dir") {
		t.Fatalf("error %v", err)
	}
}
