package bootstrap_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shieldrpc/shield/bootstrap"
	"github.com/shieldrpc/shield/internal/certgen"
)

// TestTLSFilesChecked: a listener's TLS files are loaded by Compile (and so
// by gateway check), and a missing one fails naming the listener, its
// line and the file; good files pass.
func TestTLSFilesChecked(t *testing.T) {
	noLeak(t)
	dir := t.TempDir()
	certs, err := certgen.Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	good := `network:
  listeners:
    - {name: game, address: ":7000", entry_service: auth, tls: {cert_file: server.crt, key_file: server.key, client_ca_file: ca.crt}}
actors:
`
	path := writeGame(t, good+authActor, map[string]string{"auth.lua": authLua})
	for _, f := range []string{certs.CA, certs.ServerCert, certs.ServerKey} {
		copyFile(t, f, filepath.Join(filepath.Dir(path), filepath.Base(f)))
	}
	rep, err := bootstrap.Compile(path, quiet())
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()

	bad := `network:
  listeners:
    - {name: game, address: ":7000", entry_service: auth, transport: ws, tls: {cert_file: nope.crt, key_file: server.key}}
actors:
`
	path = writeGame(t, bad+authActor, map[string]string{"auth.lua": authLua})
	msgs := compileErrors(t, path, quiet())
	expectErrors(t, msgs, []string{path + ":3:", `listener "game"`, "tls: cert_file " + filepath.Join(filepath.Dir(path), "nope.crt")})
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
