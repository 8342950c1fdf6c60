#!/bin/sh
# compare.sh runs the figures of BENCHMARKS.md: the baseline echo and two
# gateway builds (before and after a change), each a process of its own on
# the echo config, loaded in turn by the same lean generator, so that every
# figure of a row comes from the same minutes of the same machine.
#
#   bench/compare.sh BEFORE_BINARY AFTER_BINARY [ROUNDS] [DURATION]
#
# e.g. (the "before" binary built from main):
#   git archive main | tar -x -C /tmp/shield-main && (cd /tmp/shield-main && go build -o /tmp/gw-before ./cmd/gateway)
#   go build -o /tmp/gw-after ./cmd/gateway
#   bench/compare.sh /tmp/gw-before /tmp/gw-after 3 5s
#
# Each round loads, at 1 and then 16 in flight on 50 connections: the
# baseline, before forward_raw, after forward_raw, before json, after json.
# Every gateway row reports the gateway process's own CPU per request
# (bench -pid). The AFTER binary is the load tool.
set -eu
before=$1 after=$2 rounds=${3:-3} dur=${4:-5s}
tmp=$(mktemp -d)
trap 'kill $pids 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
pids=""
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
echo_addr=127.0.0.1:$(port)
"$after" bench -serve-echo "$echo_addr" >/dev/null &
pids="$pids $!"
start() { # name binary -> sets addr_<name>, pid_<name>
	a=127.0.0.1:$(port) m=127.0.0.1:$(port)
	mkdir -p "$tmp/$1"
	cfg=$("$after" bench -write-config "$tmp/$1" -listen "$a" -admin "$m")
	"$2" run -c "$cfg" 2>"$tmp/$1.log" &
	eval "pid_$1=$! addr_$1=$a"
	pids="$pids $!"
	i=0
	until curl -sf "http://$m/readyz" >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "$1 did not start:"; cat "$tmp/$1.log"; exit 1; }
		sleep 0.1
	done
}
start before "$before"
start after "$after"
load() { # label addr route [pid]
	label=$1 addr=$2 route=$3 pid=${4:-0}
	for d in 1 16; do
		"$after" bench -addr "$addr" -route "$route" -inflight $d -d "$dur" -warmup 1s -pid "$pid" $login |
			sed "s/^gateway  */$(printf '%-20s' "$label") /"
	done
}
for r in $(seq "$rounds"); do
	echo "round $r"
	login="-login 0"
	load "baseline echo" "$echo_addr" 1
	login=""
	load "before forward_raw" "$addr_before" 1 "$pid_before"
	load "after forward_raw" "$addr_after" 1 "$pid_after"
	load "before json" "$addr_before" 2 "$pid_before"
	load "after json" "$addr_after" 2 "$pid_after"
done
