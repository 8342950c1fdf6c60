package bench

import (
	"crypto/tls"
	"os"
	"path/filepath"

	"github.com/shieldrpc/shield/internal/certgen"
)

// The echo service the gateway is benchmarked with: route 1 hands the raw
// body to the handler and back (action forward_raw), route 2 decodes and
// re-encodes JSON. Limits are raised so that only the machine limits.
const (
	RouteRaw  = 1
	RouteJSON = 2
)

const echoLua = `local M = {}
function M.echo(ctx, client, req) return req end
return M
`

// The same echo service behind every transport: bench (tcp), bench_ws,
// and under TLS with the certificates WriteEchoConfig makes, bench_tls and
// bench_wss.
const echoYAML = `node: {name: bench}
network:
  listeners:
    - {name: bench, address: "127.0.0.1:0", entry_service: echo}
    - {name: bench_ws, address: "127.0.0.1:0", entry_service: echo, transport: ws}
    - {name: bench_tls, address: "127.0.0.1:0", entry_service: echo, tls: {cert_file: server.crt, key_file: server.key}}
    - {name: bench_wss, address: "127.0.0.1:0", entry_service: echo, transport: ws, tls: {cert_file: server.crt, key_file: server.key}}
log: {level: warn}
session:
  max_inflight: 256
  outbound_queue: 1024
  max_sessions: 100000
  idle_timeout: 600s
  rate_limit: {per_second: 0}
actors:
  - name: echo
    script: echo.lua
    instances: 2
    mailbox: 65536
    rpc:
      routes:
        - {id: 1, name: raw_echo, binding: echo, requires_auth: false, action: forward_raw}
        - {id: 2, name: json_echo, binding: echo, requires_auth: false}
`

// WriteEchoConfig writes the echo service's config and script, and a fresh
// test CA with a certificate for 127.0.0.1 (ca.crt, server.crt,
// server.key: see ClientTLS), into dir and returns the config's path.
func WriteEchoConfig(dir string) (string, error) {
	if _, err := certgen.Generate(dir); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "echo.lua"), []byte(echoLua), 0o644); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "actors.yaml")
	return path, os.WriteFile(path, []byte(echoYAML), 0o644)
}

// JSONBody is the request body of the JSON runs: a typical small move.
var JSONBody = []byte(`{"player_id":"p-1042","seq":18231,"x":1024.5,"y":-33.25}`)

// ClientTLS is a client TLS config that trusts the CA WriteEchoConfig
// wrote into dir.
func ClientTLS(dir string) (*tls.Config, error) {
	return certgen.ClientConfig(filepath.Join(dir, "ca.crt"), "", "")
}
