package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shieldrpc/shield/config"
	"github.com/shieldrpc/shield/internal/certgen"
)

// TestCallSaysWhatIsWrong: gateway call against a listener it does not
// speak to (a WebSocket port, a TLS port, another envelope) says what is
// likely wrong instead of only "no answer" or "connection closed".
func TestCallSaysWhatIsWrong(t *testing.T) {
	noLeak(t)
	certs, err := certgen.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := startExample(t, func(c *config.Config) {
		tlsGame := c.Network.Listeners[0]
		tlsGame.Name = "tls"
		tlsGame.TLS = &config.TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey}
		c.Network.Listeners = append(c.Network.Listeners, tlsGame)
	})
	for _, tc := range []struct {
		name, addr string
		flags      []string
		want       string
	}{
		{"a ws port", srv.Gateway.Addr("web").String(), nil, "add -ws"},
		{"a tls port", srv.Gateway.Addr("tls").String(), nil, "add -tls"},
		{"another envelope", srv.Gateway.Addr("game").String(), []string{"-envelope", "typelen"}, "-envelope typelen matches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"call", "-c", example, "-timeout", "300ms", "-wait", "10ms", "-addr", tc.addr}, tc.flags...)
			code, out, errOut := gateway(t, append(args, "login", `{"user":"x"}`)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want a hint %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, errOut)
			}
		})
	}
}

// TestCheckSchemaColumn: gateway check shows a schema only for a route
// that has one (SPEC §9): with the example game's schemas, login, move and
// join_room have a file, position (s2c) has none.
func TestCheckSchemaColumn(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Dir(example))
	cfg := strings.Replace(string(src), "network:\n", "network:\n  schemas_dir: "+filepath.Join(abs, "schemas")+"\n", 1)
	cfg = strings.ReplaceAll(cfg, "script: services/", "script: "+filepath.Join(abs, "services")+"/")
	path := filepath.Join(dir, "actors.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := gateway(t, "check", "-c", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := table(t, strings.Split(out, "\n"))
	want := map[string]string{"login": "login", "move": "move", "join_room": "join_room", "position": "-"}
	for _, r := range rows {
		if w, ok := want[r["NAME"]]; ok && r["SCHEMA"] != w {
			t.Errorf("%s: SCHEMA %q, want %q", r["NAME"], r["SCHEMA"], w)
		}
	}
}
