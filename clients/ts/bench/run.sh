#!/usr/bin/env bash
# Calls per second of one client connection, the TypeScript client
# (calls.mjs) next to the Go client (client/examples/callbench), over TCP
# and WebSocket, with 1 and 16 calls in flight, against one echo gateway
# (echo.yaml) on 127.0.0.1:7400 (tcp) and :7401 (ws). From clients/ts,
# after npm run build:
#
#   bash bench/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
root=$(cd ../.. && pwd)
tmp=$(mktemp -d)
trap 'kill "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true; rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/gateway" ./cmd/gateway && go build -o "$tmp/callbench" ./client/examples/callbench)
"$tmp/gateway" run -c bench/echo.yaml & gw=$!
for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/7401) 2>/dev/null && break; sleep 0.1; done
for p in 1 16; do
  node bench/calls.mjs tcp://127.0.0.1:7400 "$p" "$secs"
  "$tmp/callbench" -addr 127.0.0.1:7400 -p "$p" -d "${secs}s"
  node bench/calls.mjs ws://127.0.0.1:7401/ws "$p" "$secs"
  "$tmp/callbench" -addr 127.0.0.1:7401 -transport ws -p "$p" -d "${secs}s"
done
