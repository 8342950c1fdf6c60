package main

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/certgen"
)

// startExample serves the example game in-process on free loopback ports
// and no admin server, after edit changes its config; it is stopped at
// cleanup.
func startExample(t testing.TB, edit func(*config.Config)) *bootstrap.Server {
	t.Helper()
	dataDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv, err := bootstrap.Start(ctx, example, bootstrap.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Override: func(c *config.Config) {
			for i := range c.Network.Listeners {
				c.Network.Listeners[i].Address = "127.0.0.1:0"
			}
			c.Network.Admin = nil
			if c.Storage != nil {
				c.Storage.DataDir = dataDir // not the repository's configs/data
			}
			edit(c)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	return srv
}

// TestCallOverTransports: gateway call logs in and joins a room over the
// example game's ws listener, and over a tls listener (mutual TLS, with
// -ca, -cert and -key); a wrong certificate fails the call.
func TestCallOverTransports(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	certs, err := certgen.Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := startExample(t, func(c *config.Config) {
		// The game listener under mutual TLS.
		c.Network.Listeners[0].TLS = &config.TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, ClientCAFile: certs.CA}
	})

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"ws", []string{"-ws", "-addr", srv.Gateway.Addr("web").String(), "-envelope", "delimiter", "-origin", "http://127.0.0.1:9100"}},
		{"tls", []string{"-tls", "-addr", srv.Gateway.Addr("game").String(), "-ca", certs.CA, "-cert", certs.ClientCert, "-key", certs.ClientKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"call", "-c", example, "-wait", "50ms"}, tc.args...)
			args = append(args, "login", `{"user":"cli-`+tc.name+`"}`, "join_room", `{"room":"r"}`)
			code, out, errOut := gateway(t, args...)
			if code != 0 || !strings.Contains(out, `login -> {"player_id":"cli-`+tc.name+`"}`) || !strings.Contains(out, `join_room -> {"members":1,"room":"r"}`) {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
		})
	}
	code, out, errOut := gateway(t, "call", "-c", example, "-tls", "-addr", srv.Gateway.Addr("game").String(), "-ca", certs.CA,
		"-cert", certs.RogueCert, "-key", certs.RogueKey, "-timeout", "500ms", "login", `{"user":"x"}`)
	if code == 0 {
		t.Fatalf("a client certificate of another CA was served:\n%s%s", out, errOut)
	}
	if code, _, errOut := gateway(t, "call", "-c", example, "-ca", certs.CA, "login", `{}`); code != 2 || !strings.Contains(errOut, "need -tls") {
		t.Fatalf("-ca without -tls: exit %d, %s", code, errOut)
	}
}

// TestBenchTransports: a short bench with -ws and -tls reports the raw
// echo over ws, tls and wss next to plain tcp, and with -tail how the slow
// answers of each row spread.
func TestBenchTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("a load run")
	}
	noLeak(t)
	code, out, errOut := gateway(t, "bench", "-d", "200ms", "-warmup", "50ms", "-conns", "2", "-inflight", "2", "-ws", "-tls", "-tail", "1h")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// Every measured row ends in its error count, which must be exactly 0
	// (a substring test for "errors 1" let 2-9 and 20-99 through).
	rows := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		m := errorsColumn.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, _, _ := strings.Cut(line, "in-flight")
		rows[strings.TrimSpace(name)] = true
		if m[1] != "0" {
			t.Errorf("%s error frames in: %s", m[1], line)
		}
	}
	for _, row := range []string{"baseline echo", "gateway forward_raw", "gateway json", "gateway ws raw", "gateway tls raw", "gateway wss raw"} {
		if !rows[row] {
			t.Errorf("no %q row with an error count in:\n%s", row, out)
		}
	}
	if n := strings.Count(out, "slower than 1h0m0s: none of "); n != len(rows) {
		t.Errorf("%d -tail lines for %d rows in:\n%s", n, len(rows), out)
	}
}

// errorsColumn matches the last column of a bench row, "errors N".
var errorsColumn = regexp.MustCompile(`\berrors (\d+)$`)

// TestBenchFanoutAndIdle: -fanout reports the gateway next to the plain
// loop, and -idle measures a gateway process of its own (this test binary,
// re-run as the gateway: see TestMain).
func TestBenchFanoutAndIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("load runs")
	}
	noLeak(t)
	code, out, errOut := gateway(t, "bench", "-fanout", "20", "-d", "200ms", "-warmup", "50ms", "-inflight", "1,4")
	if code != 0 {
		t.Fatalf("fanout: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, row := range []string{`(?m)^gateway fan-out +in-flight 1 +\d+ pushes/s`, `(?m)^plain Go loop +in-flight 4 +\d+ pushes/s`,
		`(?m)^ratio +in-flight 4 +gateway \d+\.\d\dx of the plain loop$`} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("no %s in:\n%s", row, out)
		}
	}
	code, out, errOut = gateway(t, "bench", "-idle", "50")
	if code != 0 {
		t.Fatalf("idle: exit %d\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`^50 idle sessions \(login route 3\): RSS [-+]\d+ KiB = -?\d+\.\d KiB per session; CPU while idle`).MatchString(out) {
		t.Errorf("idle report:\n%s", out)
	}
}

// TestBenchRooms: -rooms reports the room kind next to the shield.timeout
// baseline, each on processes of their own, on one node and with -nodes 2
// (a gateway and two service nodes).
func TestBenchRooms(t *testing.T) {
	if testing.Short() {
		t.Skip("load runs")
	}
	noLeak(t)
	for _, nodes := range []string{"1", "2"} {
		code, out, errOut := gateway(t, "bench", "-rooms", "4", "-members", "2", "-nodes", nodes, "-d", "500ms", "-warmup", "200ms")
		if code != 0 {
			t.Fatalf("-nodes %s: exit %d\n%s\n%s", nodes, code, out, errOut)
		}
		for _, row := range []string{`(?m)^room kind +clients: +\d+ frames/s .* errors 0$`, `(?m)^shield.timeout baseline +clients: +\d+ frames/s .* errors 0$`,
			`(?m)server: tick lateness p50 \S+ p99 \S+ .*ticks \d+`, `(?m)all processes +cpu +\S+ per room-tick`} {
			if !regexp.MustCompile(row).MatchString(out) {
				t.Errorf("-nodes %s: no %s in:\n%s", nodes, row, out)
			}
		}
		if nodes == "2" && strings.Count(out, "service node") < 4 {
			t.Errorf("-nodes 2: want two service nodes' rows per run in:\n%s", out)
		}
	}
}
