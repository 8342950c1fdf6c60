package bench

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shieldrpc/shield/internal/certgen"
)

// The echo service the gateway is benchmarked with: route 1 hands the raw
// body to the handler and back (action forward_raw), route 2 decodes and
// re-encodes JSON, route 3 logs a session in as the player its body names
// (a bind to the same service, so the session's VM is then
// fnv1a64(player) % 2) and answers with an empty body. Limits are raised
// so that only the machine limits.
const (
	RouteRaw   = 1
	RouteJSON  = 2
	RouteLogin = 3
)

// The fan-out service, on a listener of its own (EchoConfig.Fan): route 10
// joins the one room (the member's ref is kept until its session closes),
// route 11 pushes its raw body to every member on route 12 and answers
// with the number accepted.
const (
	RouteJoin  = 10
	RouteBlast = 11
	RoutePush  = 12
)

const echoLua = `local M = {}
function M.echo(ctx, client, req) return req end
function M.login(ctx, client, req) shield.client.bind(client, req, "echo") end
return M
`

const fanLua = `local M = {}
local members, at = {}, {}
function M.join(ctx, client, req)
  members[#members + 1] = shield.client.ref(client)
  at[client.session_id] = #members
end
function M.client_disconnected(ctx, client, reason)
  local i = at[client.session_id]
  if i == nil then return end
  local last = members[#members]
  members[i], at[last.session_id] = last, i
  members[#members], at[client.session_id] = nil, nil
end
function M.blast(ctx, client, req) return tostring(shield.client_rpc.fan_push(members, req)) end
return M
`

// EchoConfig says where the echo config's listeners are: "127.0.0.1:0" (a
// free port) when empty.
type EchoConfig struct {
	Listen string // the plain tcp listener, bench
	Fan    string // the fan-out service's tcp listener, fan
	// Admin, when set, adds the admin server (metrics, /debug/pprof/) on
	// that address.
	Admin string
}

// The same echo service behind every transport: bench (tcp), bench_ws,
// and under TLS with the certificates WriteEchoConfig makes, bench_tls and
// bench_wss; and the fan-out service on fan. The fan service's push body is
// raw: a body pushes as the bytes it is.
const echoYAML = `node: {name: bench}
network:
  listeners:
    - {name: bench, address: %q, entry_service: echo}
    - {name: bench_ws, address: "127.0.0.1:0", entry_service: echo, transport: ws}
    - {name: bench_tls, address: "127.0.0.1:0", entry_service: echo, tls: {cert_file: server.crt, key_file: server.key}}
    - {name: bench_wss, address: "127.0.0.1:0", entry_service: echo, transport: ws, tls: {cert_file: server.crt, key_file: server.key}}
    - {name: fan, address: %q, entry_service: fan, protocol: {body: raw}}
%slog: {level: warn}
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
        - {id: 3, name: login, binding: login, requires_auth: false, action: forward_raw}
  - name: fan
    script: fan.lua
    mailbox: 65536
    rpc:
      routes:
        - {id: 10, name: fan_join, binding: join, requires_auth: false}
        - {id: 11, name: fan_blast, binding: blast, requires_auth: false}
        - {id: 12, name: fan_push, binding: fan_push, direction: s2c}
`

// WriteEchoConfig writes the echo service's config and scripts, and a
// fresh test CA with a certificate for 127.0.0.1 (ca.crt, server.crt,
// server.key: see ClientTLS), into dir and returns the config's path.
func WriteEchoConfig(dir string) (string, error) { return EchoConfig{}.Write(dir) }

// Write writes the config as WriteEchoConfig does, with c's addresses.
func (c EchoConfig) Write(dir string) (string, error) {
	if _, err := certgen.Generate(dir); err != nil {
		return "", err
	}
	for name, src := range map[string]string{"echo.lua": echoLua, "fan.lua": fanLua} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return "", err
		}
	}
	or := func(s string) string {
		if s == "" {
			return "127.0.0.1:0"
		}
		return s
	}
	admin := ""
	if c.Admin != "" {
		admin = fmt.Sprintf("  admin: {address: %q, pprof: true}\n", c.Admin)
	}
	path := filepath.Join(dir, "actors.yaml")
	return path, os.WriteFile(path, fmt.Appendf(nil, echoYAML, or(c.Listen), or(c.Fan), admin), 0o644)
}

// JSONBody is the request body of the JSON runs: a typical small move.
var JSONBody = []byte(`{"player_id":"p-1042","seq":18231,"x":1024.5,"y":-33.25}`)

// ClientTLS is a client TLS config that trusts the CA WriteEchoConfig
// wrote into dir.
func ClientTLS(dir string) (*tls.Config, error) {
	return certgen.ClientConfig(filepath.Join(dir, "ca.crt"), "", "")
}
