#!/usr/bin/env bash
# Calls per second of one client connection, the C# client (Tests~/Bench.cs,
# under mono) beside the TypeScript (clients/ts/bench/calls.mjs) and Go
# (client/examples/callbench) clients, over TCP and WebSocket, with 1 and 16
# calls in flight, against one echo gateway (clients/ts/bench/echo.yaml, idlen)
# on 127.0.0.1:7400 (tcp) and :7401 (ws). The TypeScript client must be
# built first (cd clients/ts && npm ci && npm run build). One JSON line per run:
#
#   bash clients/csharp/bench/run.sh [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-5}
tmp=$(mktemp -d)
gw=
trap 'if [ -n "$gw" ]; then kill "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true; fi; rm -rf "$tmp"' EXIT
if command -v csc >/dev/null 2>&1; then csc=(csc -nologo -optimize+); else csc=(mcs -optimize+); fi
(cd "$root" && go build -o "$tmp/gateway" ./cmd/gateway && go build -o "$tmp/callbench" ./client/examples/callbench)
"${csc[@]}" -out:"$tmp/bench.exe" "$here"/Runtime/*.cs "$here"/Samples~/Game/Routes.cs "$here"/Samples~/DocExample.cs "$here"/Tests~/*.cs >/dev/null
cd "$root/clients/ts"
"$tmp/gateway" run -c bench/echo.yaml & gw=$!
for _ in $(seq 100); do { exec 3<>/dev/tcp/127.0.0.1/7401; } 2>/dev/null && { exec 3<&- 3>&-; break; }; sleep 0.1; done
for p in 1 16; do
  for t in tcp ws; do
    if [ "$t" = tcp ]; then url=tcp://127.0.0.1:7400; addr=(-addr 127.0.0.1:7400); else url=ws://127.0.0.1:7401/ws; addr=(-addr 127.0.0.1:7401 -transport ws); fi
    mono "$tmp/bench.exe" --bench "$url" "$p" "$secs"
    "$tmp/callbench" "${addr[@]}" -p "$p" -d "${secs}s"
    node bench/calls.mjs "$url" "$p" "$secs"
  done
done
