package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/testutil"
)

// TestMain fails the package when a test leaves a goroutine behind.
// Decoding starts none, so the count must come back to where it began.
func TestMain(m *testing.M) {
	os.Exit(testutil.CheckGoroutinesMain(m, "config"))
}

// parseOK parses src and fails the test on any error.
func parseOK(t testing.TB, src string) *config.Config {
	t.Helper()
	cfg, errs := config.Parse(file, []byte(src))
	if len(errs) > 0 {
		t.Fatalf("unexpected errors:\n%v", errs)
	}
	return cfg
}

// TestDefaults checks every default of SPEC §2 against a file that sets
// nothing it may leave out. The values are written out, not taken from the
// package's constants, so that a wrong constant fails here.
func TestDefaults(t *testing.T) {
	cfg := parseOK(t, routesHead+"        - {id: 1001, binding: login}\n")
	want := &config.Config{
		File: "conf/game.yaml",
		Dir:  "conf",
		Node: config.Node{Name: "gw"},
		Network: config.Network{
			Listeners: []config.Listener{{
				Line:             3,
				Name:             "game",
				Address:          "127.0.0.1:7000",
				Transport:        "tcp",
				HandshakeTimeout: 10 * time.Second,
				EntryService:     "auth",
				Protocol:         config.Protocol{Envelope: "idlen", Body: "json", MaxFrameBytes: 65536},
			}},
		},
		Log: config.Log{Format: "json", Level: "info"},
		Lua: config.Lua{
			MaxStringBytes: 16777216,
			HeapLimitBytes: 2147483648,
			HTTP:           config.HTTP{Timeout: 5 * time.Second, MaxResponseBytes: 1048576},
		},
		Tracing: config.Tracing{SampleRatio: 0.1},
		Session: config.Session{
			IdleTimeout:        60 * time.Second,
			WriteTimeout:       5 * time.Second,
			MaxInflight:        32,
			OutboundQueue:      256,
			DuplicateLogin:     "kick_old",
			MaxSessions:        100000,
			RateLimit:          config.RateLimit{PerSecond: 200, Burst: 400},
			ShutdownGrace:      10 * time.Second,
			OutboundQueueBytes: 1048576,
			AuthMaxFrameBytes:  8192,
			AuthTimeout:        30 * time.Second,
			ResumeWindow:       0,
		},
		Actors: []config.Actor{{
			Line:           5,
			Name:           "auth",
			Script:         "auth.lua",
			ScriptLine:     6,
			Instances:      1,
			Mailbox:        1024,
			HandlerTimeout: 15 * time.Second,
			MaxPending:     10000,
			Routes: []config.Route{{
				Line:         9,
				ID:           1001,
				Binding:      "login",
				Direction:    config.C2S,
				OwnerService: "auth",
				RequiresAuth: true,
				Action:       config.DecodeLocal,
				LazyDecode:   true,
			}},
		}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", *cfg, *want)
	}
	if cfg.Network.Admin != nil {
		t.Errorf("admin = %+v, want none when the file has no admin", cfg.Network.Admin)
	}
	// Spelled out although DeepEqual checked them: nil is the meaning here.
	if cfg.Cluster != nil || cfg.Storage != nil || cfg.Node.Services != nil || cfg.Actors[0].Settings != nil {
		t.Errorf("cluster %+v, storage %+v, node.services %#v, settings %#v; want all nil when absent",
			cfg.Cluster, cfg.Storage, cfg.Node.Services, cfg.Actors[0].Settings)
	}
	if !cfg.Hosts("auth", 0) || cfg.Hosts("auth", 1) || cfg.Hosts("nope", 0) {
		t.Error("without a cluster the node must host every instance of every actor, and nothing else")
	}
}

func TestDefaultsWebSocketAndAdmin(t *testing.T) {
	cfg := parseOK(t, "network:\n  admin: {address: \":9100\"}\n  listeners:\n    - {name: game, address: \":7000\", entry_service: auth, transport: ws}\n"+authHead[len(listenersHead):])
	if got := cfg.Network.Listeners[0].Path; got != "/ws" {
		t.Errorf("ws path = %q, want /ws", got)
	}
	if a := cfg.Network.Admin; a == nil || a.Address != ":9100" || a.PProf {
		t.Errorf("admin = %+v, want address :9100 and pprof false", a)
	}
	if got := cfg.Listener("game"); got != &cfg.Network.Listeners[0] {
		t.Errorf("Listener(game) = %p, want the first listener", got)
	}
	if got := cfg.Listener("nope"); got != nil {
		t.Errorf("Listener(nope) = %+v, want nil", got)
	}
}

// TestEveryKey sets every key of SPEC §2 to a value other than its default
// and checks that each one lands.
func TestEveryKey(t *testing.T) {
	src := `node:
  name: gw-7
  services: [auth/1, auth/2]
cluster:
  nats: nats://10.0.0.1:4222, tls://10.0.0.2:4222
  prefix: game-eu_1
  heartbeat: 2s
  node_timeout: 5s
storage:
  data_dir: kv
  buckets:
    - {name: players, max_value_bytes: 1024, ttl: 24h}
    - {name: matches}
network:
  listeners:
    - name: game
      address: 127.0.0.1:7000
      transport: ws
      path: /game
      allowed_origins: [https://a.example, https://b.example]
      handshake_timeout: 3s
      tls: {cert_file: server.crt, key_file: server.key, client_ca_file: ca.crt}
      entry_service: auth
      protocol:
        envelope: typelen
        body: protobuf
        max_frame_bytes: 4096
        descriptor_set: game.pb
  schemas_dir: schemas
  admin:
    address: 127.0.0.1:9100
    pprof: true
    play: true
    token: s3cret-Token
log:
  format: text
  level: debug
lua:
  max_string_bytes: 1024
  heap_limit_bytes: 1048576
  http:
    allow: ["api.example.com:443", "127.0.0.1:8080"]
    timeout: 2s
    max_response_bytes: 4096
session:
  idle_timeout: 30s
  write_timeout: 2s
  max_inflight: 8
  outbound_queue: 64
  duplicate_login: reject_new
  max_sessions: 10
  rate_limit: {per_second: 5, burst: 7}
  shutdown_grace: 1s
  outbound_queue_bytes: 4096
  auth_max_frame_bytes: 1024
  auth_timeout: 10s
  resume_window: 30s
actors:
  - name: auth
    script: services/auth.lua
    instances: 3
    mailbox: 16
    handler_timeout: 250ms
    max_pending: 5
    settings: {turn_seconds: 30}
    rpc:
      routes:
        - id: 1001
          name: login
          binding: do_login
          direction: bidirectional
          owner_service: auth
          requires_auth: false
          action: forward_raw
          lazy_decode: false
          request_codec: raw
          request_schema: game.Login
`
	cfg := parseOK(t, src)
	l := cfg.Network.Listeners[0]
	wantL := config.Listener{
		Line: 16, Name: "game", Address: "127.0.0.1:7000", Transport: "ws", Path: "/game",
		AllowedOrigins:   []string{"https://a.example", "https://b.example"},
		HandshakeTimeout: 3 * time.Second,
		TLS:              &config.TLS{CertFile: "conf/server.crt", KeyFile: "conf/server.key", ClientCAFile: "conf/ca.crt"},
		EntryService:     "auth",
		Protocol:         config.Protocol{Envelope: "typelen", Body: "protobuf", MaxFrameBytes: 4096, DescriptorSet: "conf/game.pb"},
	}
	if !reflect.DeepEqual(l, wantL) {
		t.Errorf("listener:\n got %+v\nwant %+v", l, wantL)
	}
	if got, want := cfg.Network.SchemasDir, "conf/schemas"; got != want {
		t.Errorf("schemas_dir = %q, want %q", got, want)
	}
	if got, want := *cfg.Network.Admin, (config.Admin{Address: "127.0.0.1:9100", PProf: true, Play: true, Token: "s3cret-Token"}); got != want {
		t.Errorf("admin = %+v, want %+v", got, want)
	}
	if got, want := cfg.Node.Name, "gw-7"; got != want {
		t.Errorf("node.name = %q, want %q", got, want)
	}
	if got, want := cfg.Log, (config.Log{Format: "text", Level: "debug"}); got != want {
		t.Errorf("log = %+v, want %+v", got, want)
	}
	wantLua := config.Lua{MaxStringBytes: 1024, HeapLimitBytes: 1048576, HTTP: config.HTTP{
		Allow: []string{"api.example.com:443", "127.0.0.1:8080"}, Timeout: 2 * time.Second, MaxResponseBytes: 4096,
	}}
	if got, want := cfg.Lua, wantLua; !reflect.DeepEqual(got, want) {
		t.Errorf("lua = %+v, want %+v", got, want)
	}
	wantS := config.Session{
		IdleTimeout: 30 * time.Second, WriteTimeout: 2 * time.Second, MaxInflight: 8, OutboundQueue: 64,
		DuplicateLogin: "reject_new", MaxSessions: 10, RateLimit: config.RateLimit{PerSecond: 5, Burst: 7},
		ShutdownGrace: time.Second, OutboundQueueBytes: 4096, AuthMaxFrameBytes: 1024, AuthTimeout: 10 * time.Second,
		ResumeWindow: 30 * time.Second,
	}
	if cfg.Session != wantS {
		t.Errorf("session:\n got %+v\nwant %+v", cfg.Session, wantS)
	}
	a := cfg.Actors[0]
	if a.Instances != 3 || a.Mailbox != 16 || a.HandlerTimeout != 250*time.Millisecond || a.MaxPending != 5 {
		t.Errorf("actor = %+v", a)
	}
	if want := map[string]any{"turn_seconds": int64(30)}; !reflect.DeepEqual(a.Settings, want) {
		t.Errorf("settings = %#v, want %#v", a.Settings, want)
	}
	wantNode := config.Node{Name: "gw-7", ServicesLine: 3, Services: []config.NodeService{
		{Line: 3, Actor: "auth", Instance: 1}, {Line: 3, Actor: "auth", Instance: 2},
	}}
	if !reflect.DeepEqual(cfg.Node, wantNode) {
		t.Errorf("node = %+v, want %+v", cfg.Node, wantNode)
	}
	wantC := config.Cluster{Line: 5, NATS: "nats://10.0.0.1:4222, tls://10.0.0.2:4222", Prefix: "game-eu_1",
		Heartbeat: 2 * time.Second, NodeTimeout: 5 * time.Second}
	if cfg.Cluster == nil || *cfg.Cluster != wantC {
		t.Errorf("cluster = %+v, want %+v", cfg.Cluster, wantC)
	}
	if got, want := cfg.Cluster.URLs(), []string{"nats://10.0.0.1:4222", "tls://10.0.0.2:4222"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cluster URLs = %q, want %q", got, want)
	}
	wantSt := &config.Storage{Line: 10, DataDir: filepath.Join("conf", "kv"), Replicas: 1, Buckets: []config.Bucket{
		{Line: 12, Name: "players", MaxValueBytes: 1024, TTL: 24 * time.Hour},
		{Line: 13, Name: "matches", MaxValueBytes: 65536},
	}}
	if !reflect.DeepEqual(cfg.Storage, wantSt) {
		t.Errorf("storage = %+v, want %+v", cfg.Storage, wantSt)
	}
	wantR := config.Route{
		Line: 68, ID: 1001, Name: "login", Binding: "do_login", Direction: config.Bidi, OwnerService: "auth",
		RequiresAuth: false, Action: config.ForwardRaw, LazyDecode: false, RequestCodec: "raw", RequestSchema: "game.Login",
	}
	if a.Routes[0] != wantR {
		t.Errorf("route:\n got %+v\nwant %+v", a.Routes[0], wantR)
	}
}

// TestDirectionSpellings checks that both spellings of each direction parse
// to the same value, and that an absent direction is c2s.
func TestDirectionSpellings(t *testing.T) {
	for _, tc := range []struct {
		short, long string
		want        config.Direction
	}{
		{"c2s", "client_to_server", config.C2S},
		{"s2c", "server_to_client", config.S2C},
		{"bidi", "bidirectional", config.Bidi},
	} {
		for _, spelling := range []string{tc.short, tc.long} {
			cfg := parseOK(t, routesHead+"        - {id: 1001, binding: b, direction: "+spelling+"}\n")
			r := cfg.Actors[0].Routes[0]
			if r.Direction != tc.want {
				t.Errorf("direction %s = %v, want %v", spelling, r.Direction, tc.want)
			}
			if r.Direction.String() != tc.short {
				t.Errorf("direction %s prints as %q, want %q", spelling, r.Direction, tc.short)
			}
		}
	}
	cfg := parseOK(t, valid)
	if d := cfg.Actors[0].Routes[0].Direction; d != config.C2S || !d.FromClient() || d.ToClient() {
		t.Errorf("default direction = %v, want c2s", d)
	}
	if !config.Bidi.FromClient() || !config.Bidi.ToClient() || config.S2C.FromClient() || !config.S2C.ToClient() {
		t.Error("FromClient/ToClient disagree with SPEC §2")
	}
}

// TestRouteIDRange: 1 and 16777215 (24 bits, idlen's route_id) are the
// smallest and largest ids, in any integer notation YAML has.
func TestRouteIDRange(t *testing.T) {
	cfg := parseOK(t, routesHead+"        - {id: 1, binding: a}\n        - {id: 16777215, binding: b}\n        - {id: 0x10, binding: c}\n        - {id: 1_000, binding: d}\n")
	var ids []int64
	for _, r := range cfg.Actors[0].Routes {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != "[1 16777215 16 1000]" {
		t.Errorf("ids = %v", ids)
	}
}

func TestActions(t *testing.T) {
	for name, want := range map[string]config.Action{
		"decode_local": config.DecodeLocal, "forward_raw": config.ForwardRaw, "drop": config.Drop,
	} {
		cfg := parseOK(t, routesHead+"        - {id: 1001, binding: b, action: "+name+"}\n")
		if got := cfg.Actors[0].Routes[0].Action; got != want || got.String() != name {
			t.Errorf("action %s = %v, want %v", name, got, want)
		}
	}
}

// TestRelativePaths loads a real file and checks that every path in it
// resolves against the file's folder, whatever the working directory, and
// that absolute paths stay as written.
func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "elsewhere", "ca.crt")
	src := `network:
  schemas_dir: schemas
  listeners:
    - name: game
      address: ":7000"
      entry_service: auth
      tls: {cert_file: tls/server.crt, key_file: ../keys/server.key, client_ca_file: "` + abs + `"}
      protocol: {body: protobuf, descriptor_set: proto/game.pb}
actors:
  - {name: auth, script: services/auth.lua}
`
	path := filepath.Join(dir, "cfg", "game.yaml")
	testutil.WriteFile(t, path, src)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(dir, "cfg")
	if cfg.Dir != cfgDir || cfg.File != path {
		t.Errorf("File, Dir = %q, %q; want %q, %q", cfg.File, cfg.Dir, path, cfgDir)
	}
	for _, c := range []struct{ what, got, want string }{
		{"script", cfg.ScriptPath(&cfg.Actors[0]), filepath.Join(cfgDir, "services", "auth.lua")},
		{"schemas_dir", cfg.Network.SchemasDir, filepath.Join(cfgDir, "schemas")},
		{"cert_file", cfg.Network.Listeners[0].TLS.CertFile, filepath.Join(cfgDir, "tls", "server.crt")},
		{"key_file", cfg.Network.Listeners[0].TLS.KeyFile, filepath.Join(dir, "keys", "server.key")},
		{"client_ca_file", cfg.Network.Listeners[0].TLS.ClientCAFile, abs},
		{"descriptor_set", cfg.Network.Listeners[0].Protocol.DescriptorSet, filepath.Join(cfgDir, "proto", "game.pb")},
		{"Path(abs)", cfg.Path(abs), abs},
		{"Path(empty)", cfg.Path(""), ""},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
}

// TestRateLimitBurst: per_second alone gets a burst of twice the rate;
// a burst given is kept; 0 turns the limit off.
func TestRateLimitBurst(t *testing.T) {
	for _, tc := range []struct {
		rate string
		want config.RateLimit
	}{
		{"{per_second: 50}", config.RateLimit{PerSecond: 50, Burst: 100}},
		{"{per_second: 200}", config.RateLimit{PerSecond: 200, Burst: 400}},
		{"{per_second: 1}", config.RateLimit{PerSecond: 1, Burst: 2}},
		{"{per_second: 50, burst: 60}", config.RateLimit{PerSecond: 50, Burst: 60}},
		{"{burst: 60}", config.RateLimit{PerSecond: 200, Burst: 60}},
		{"{per_second: 0}", config.RateLimit{PerSecond: 0, Burst: 0}},
		{"{per_second: 0, burst: 0}", config.RateLimit{PerSecond: 0, Burst: 0}},
		{"{}", config.RateLimit{PerSecond: 200, Burst: 400}},
	} {
		cfg := parseOK(t, valid+"session: {rate_limit: "+tc.rate+"}\n")
		if cfg.Session.RateLimit != tc.want {
			t.Errorf("rate_limit %s = %+v, want %+v", tc.rate, cfg.Session.RateLimit, tc.want)
		}
	}
}

// TestParseCollectsEveryError: one run reports every problem of every
// section, sorted by line, not only the first.
func TestParseCollectsEveryError(t *testing.T) {
	src := `node: {name: ""}
network:
  listeners:
    - {name: game, address: ":7000", entry_service: lobby, transport: udp}
log: {level: loud}
session: {idle_timeout: 0s, max_inflight: many}
actors:
  - name: auth
    script: auth.lua
    instances: 0
    rpc:
      routes:
        - {id: 0, name: login, binding: login}
        - {id: 7, name: a, bindng: x}
        - {id: 7, name: b, binding: y, direction: sideways}
`
	_, errs := config.Parse(file, []byte(src))
	expectErrors(t, errs, [][]string{
		{file + ":1:", "node.name: must not be empty"},
		{file + ":4:", `network.listeners[0].transport: "udp" is not one of tcp, ws`},
		{file + ":4:", `listener "game": entry_service "lobby" is not an actor`},
		{file + ":5:", `log.level: "loud" is not one of`},
		{file + ":6:", `session.idle_timeout: must be above zero, got "0s"`},
		{file + ":6:", `session.max_inflight: must be an integer, got the string "many"`},
		{file + ":10:", `actor "auth": instances: 0 is out of range 1..1024`},
		{file + ":13:", `actor "auth": route (login): id: 0 is out of range`},
		{file + ":14:", `actor "auth": route 7 (a): route: unknown key "bindng" (did you mean "binding"?)`},
		{file + ":14:", `actor "auth": route 7 (a): binding is required`},
		{file + ":15:", `actor "auth": route 7 (b): direction: "sideways" is not one of`},
		{file + ":15:", `actor "auth": route 7 (b): id 7 used twice in this actor (first at line 14)`},
	})
}

func TestExampleConfig(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "configs", "actors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Node.Name != "gw-1" || len(cfg.Network.Listeners) != 2 || cfg.Network.Admin == nil {
		t.Errorf("node/network = %+v / %+v", cfg.Node, cfg.Network)
	}
	if web := cfg.Network.Listeners[1]; web.Transport != "ws" || web.Path != "/ws" || web.Protocol.Envelope != "delimiter" || len(web.AllowedOrigins) != 2 {
		t.Errorf("web listener = %+v", web)
	}
	var names []string
	routes := 0
	for _, a := range cfg.Actors {
		names = append(names, a.Name)
		routes += len(a.Routes)
	}
	if got := strings.Join(names, ","); got != "auth,player,room,arena" || routes != 9 {
		t.Errorf("actors = %s with %d routes, want auth,player,room,arena with 9", got, routes)
	}
	if a := cfg.Actors[3]; a.Room == nil || a.Room.TickHz != 20 || a.Room.MaxMembers != 8 || len(a.Routes) != 1 || !a.Routes[0].RoomInput {
		t.Errorf("arena = %+v", a)
	}
	if q := cfg.Match.Queues; len(q) != 1 || q[0].Name != "arena" || q[0].Room != "arena" || q[0].MinPlayers != 2 || q[0].MaxPlayers != 8 {
		t.Errorf("match = %+v", cfg.Match)
	}
	if p := cfg.Actors[1]; p.Instances != 2 || p.Routes[5].OwnerService != "room" || p.Routes[5].Direction != config.S2C {
		t.Errorf("player = %+v", p)
	}
	if s := cfg.Storage; s == nil || s.DataDir != filepath.Join("..", "configs", "data") || len(s.Buckets) != 1 || s.Buckets[0].Name != "players" {
		t.Errorf("storage = %+v", s)
	}
	if a := cfg.Actors[0]; a.Settings["token_secret"] == nil || a.Settings["dev_login"] != true {
		t.Errorf("auth settings = %v", a.Settings)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	cfg, err := config.Load(path)
	var errs config.Errors
	if cfg != nil || !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("Load = %v, %v; want nil and one config error", cfg, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, path+": cannot read configuration") {
		t.Errorf("message = %q", msg)
	}
}

// TestLoadReturnsConfigWithErrors: the config decoded so far comes back
// with the errors, so that layer 2 can report in the same run.
func TestLoadReturnsConfigWithErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "game.yaml")
	testutil.WriteFile(t, path, valid+"session: {max_inflight: 0}\n")
	cfg, err := config.Load(path)
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || cfg == nil || len(cfg.Actors) != 1 {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}
	if !strings.HasPrefix(err.Error(), path+":10: session.max_inflight") {
		t.Errorf("message = %q", err)
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		err  config.Error
		want string
	}{
		{config.Error{File: "a.yaml", Msg: "m"}, "a.yaml: m"},
		{config.Error{File: "a.yaml", Line: 3, Msg: "m"}, "a.yaml:3: m"},
		{config.Error{File: "a.yaml", Line: 3, Actor: "x", Msg: "m"}, `a.yaml:3: actor "x": m`},
		{config.Error{File: "a.yaml", Line: 3, Actor: "x", Route: config.RouteLabel(1001, "login"), Msg: "m"}, `a.yaml:3: actor "x": route 1001 (login): m`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	for _, tc := range []struct {
		id   int64
		name string
		want string
	}{
		{1001, "login", "route 1001 (login)"},
		{1001, "", "route 1001"},
		{0, "login", "route (login)"},
		{0, "", "route without id"},
		{-1, "", "route -1"},
	} {
		if got := config.RouteLabel(tc.id, tc.name); got != tc.want {
			t.Errorf("RouteLabel(%d, %q) = %q, want %q", tc.id, tc.name, got, tc.want)
		}
	}
	if err := config.Errors(nil).Err(); err != nil {
		t.Errorf("empty Errors.Err() = %v, want nil", err)
	}
	es := config.Errors{{File: "b", Line: 2, Msg: "x"}, {File: "a", Line: 9, Msg: "y"}, {File: "b", Line: 1, Msg: "z"}}
	if got, want := es.Err().Error(), "a:9: y\nb:1: z\nb:2: x"; got != want {
		t.Errorf("Errors = %q, want %q", got, want)
	}
}

// TestLongValuesAreCut: a message quotes a short prefix of a bad value,
// never all of it.
func TestLongValuesAreCut(t *testing.T) {
	long := strings.Repeat("x", 1000) // YAML's longest plain key is 1024 bytes
	_, errs := config.Parse(file, []byte(valid+"log: {level: "+long+long+"}\n"+long+": 1\n"))
	if len(errs) != 2 {
		t.Fatalf("errors: %v", errs)
	}
	for _, e := range errs {
		if len(e.Error()) > 300 {
			t.Errorf("message of %d bytes: %.100q...", len(e.Error()), e.Error())
		}
	}
}

// BenchmarkParse100x100 decodes and validates 100 actors of 100 routes,
// layer 1 of BenchmarkCompile100x100 in package bootstrap.
func BenchmarkParse100x100(b *testing.B) {
	var src strings.Builder
	src.WriteString(listenersHead + "actors:\n  - {name: auth, script: auth.lua}\n")
	for a := range 100 {
		fmt.Fprintf(&src, "  - name: svc%d\n    script: svc%d.lua\n    rpc:\n      routes:\n", a, a)
		for r := range 100 {
			id := a*100 + r + 1
			fmt.Fprintf(&src, "        - {id: %d, name: r%d, binding: h%d}\n", id, id, r)
		}
	}
	data := []byte(src.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := config.Parse(file, data); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// TestTracingKeys: every key of the tracing block (docs/tracing.md).
func TestTracingKeys(t *testing.T) {
	cfg := parseOK(t, "tracing:\n  enabled: true\n  endpoint: https://otel.example:4318/v1/traces\n  sample_ratio: 1\n  service_name: game-eu\n"+
		routesHead+"        - {id: 1001, binding: login}\n")
	want := config.Tracing{Enabled: true, Endpoint: "https://otel.example:4318/v1/traces", SampleRatio: 1, ServiceName: "game-eu"}
	if cfg.Tracing != want {
		t.Errorf("tracing = %+v, want %+v", cfg.Tracing, want)
	}
	if cfg := parseOK(t, "tracing: {sample_ratio: 0}\n"+routesHead+"        - {id: 1001, binding: login}\n"); cfg.Tracing.SampleRatio != 0 {
		t.Errorf("sample_ratio 0 read as %v", cfg.Tracing.SampleRatio)
	}
}
