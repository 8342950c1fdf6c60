#!/usr/bin/env bash
# The C# client's tests: builds the client, the example game's stubs, the
# generator's golden C# stubs, the docs/clients.md example and the test
# program (Tests~/) with csc (Roslyn)
# or, where only Mono's mcs is installed (Debian's mono-complete), mcs;
# starts a gateway built from this tree serving the example game on four
# loopback listeners (TCP and WebSocket, idlen and typelen) with resume on;
# waits for /readyz; runs the tests with mono; stops the gateway. Prints one
# line, "N passed, N failed" (details on stderr), and exits non-zero on any
# failure. SHIELD_TEST_RUN=word runs only the tests whose name holds it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
gw=
cleanup() {
  if [ -n "$gw" ]; then
    kill "$gw" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$gw" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$gw" 2>/dev/null || true
    wait "$gw" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "test.sh: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

if command -v csc >/dev/null 2>&1; then csc=(csc -nologo -langversion:7.3); else csc=(mcs -langversion:7.2); fi  # mcs knows 7.2 at most: within 7.3
command -v mono >/dev/null 2>&1 || fail "mono is not installed (apt-get install mono-complete)"

(cd "$root" && go build -o "$tmp/gateway" ./cmd/gateway) >&2 || fail "go build ./cmd/gateway failed"
"${csc[@]}" -warnaserror -out:"$tmp/tests.exe" "$here"/Runtime/*.cs "$here"/Samples~/Game/Routes.cs "$here"/Samples~/DocExample.cs "$here"/Tests~/*.cs >&2 \
  || fail "${csc[0]} failed"

# The generator's C# golden stubs (internal/gen/testdata/cs) compile too.
"${csc[@]}" -warnaserror -target:library -out:"$tmp/Shield.Client.dll" "$here"/Runtime/*.cs >&2 || fail "${csc[0]} failed on Runtime"
for golden in "$root"/internal/gen/testdata/cs/*.txt; do
  name=$(basename "$golden" .txt)
  awk '/^-- Routes.cs --$/{p=1;next} /^-- .* --$/{p=0} p' "$golden" >"$tmp/golden_$name.cs"
  "${csc[@]}" -warnaserror -target:library -r:"$tmp/Shield.Client.dll" -out:"$tmp/golden_$name.dll" "$tmp/golden_$name.cs" >&2 \
    || fail "the C# stubs of $golden do not compile"
done

mapfile -t ports < <(mono "$tmp/tests.exe" --free-ports 5)
[ "${#ports[@]}" -eq 5 ] || fail "no free ports"
# configs/actors.yaml's actors, their scripts by absolute path.
actors=$(sed -n '/^actors:/,$p' "$root/configs/actors.yaml" | sed -E "s#^( *script: *)([^ ]+) *\$#\\1\"$root/configs/\\2\"#")
cat >"$tmp/gateway.yaml" <<YAML
node: {name: gw-cs}
network:
  listeners:
    - {name: tcp_idlen, address: "127.0.0.1:${ports[0]}", entry_service: auth, protocol: {envelope: idlen, body: json}}
    - {name: tcp_typelen, address: "127.0.0.1:${ports[1]}", entry_service: auth, protocol: {envelope: typelen, body: json}}
    - {name: ws_idlen, address: "127.0.0.1:${ports[2]}", transport: ws, path: /ws, entry_service: auth, protocol: {envelope: idlen, body: json}}
    - {name: ws_typelen, address: "127.0.0.1:${ports[3]}", transport: ws, path: /ws, entry_service: auth, protocol: {envelope: typelen, body: json}}
  admin: {address: "127.0.0.1:${ports[4]}"}
  schemas_dir: "$root/configs/schemas"
session:
  idle_timeout: 60s
  duplicate_login: kick_old
  resume_window: 30s
  shutdown_grace: 1s
log: {format: text, level: warn}
$actors
YAML
"$tmp/gateway" run -c "$tmp/gateway.yaml" 2>"$tmp/gateway.log" & gw=$!

# /readyz over bash's /dev/tcp: no curl needed.
ready() {
  { exec 3<>"/dev/tcp/127.0.0.1/${ports[4]}"; } 2>/dev/null || return 1
  printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  local status; read -r -t 2 status <&3 || true
  exec 3<&- 3>&-
  [[ "$status" == *" 200"* ]]
}
for _ in $(seq 300); do
  ready && break
  kill -0 "$gw" 2>/dev/null || { cat "$tmp/gateway.log" >&2; fail "the gateway exited"; }
  sleep 0.1
done
ready || { cat "$tmp/gateway.log" >&2; fail "the gateway is not ready after 30 s"; }

export SHIELD_ROOT="$root"
export SHIELD_TCP_IDLEN="tcp://127.0.0.1:${ports[0]}" SHIELD_TCP_TYPELEN="tcp://127.0.0.1:${ports[1]}"
export SHIELD_ADMIN="http://127.0.0.1:${ports[4]}"
export SHIELD_WS_IDLEN="ws://127.0.0.1:${ports[2]}/ws" SHIELD_WS_TYPELEN="ws://127.0.0.1:${ports[3]}/ws"
set +e
timeout 600 mono --debug "$tmp/tests.exe"
rc=$?
set -e
if [ "$rc" -ne 0 ] && [ -s "$tmp/gateway.log" ]; then echo "--- gateway log" >&2; tail -50 "$tmp/gateway.log" >&2; fi
exit "$rc"
