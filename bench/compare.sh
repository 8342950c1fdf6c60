#!/bin/sh
# compare.sh runs the figures of BENCHMARKS.md: the baselines and two
# gateway builds (before and after a change), each a process of its own on
# the echo config, loaded in turn by the same lean generator, so that every
# figure of a table comes from the same minutes of the same machine.
#
#   bench/compare.sh BEFORE_BINARY AFTER_BINARY [ROUNDS] [DURATION]
#
# e.g. (the "before" binary built from main):
#   git archive main | tar -x -C /tmp/shield-main && (cd /tmp/shield-main && go build -o /tmp/gw-before ./cmd/gateway)
#   go build -o /tmp/gw-after ./cmd/gateway
#   bench/compare.sh /tmp/gw-before /tmp/gw-after 3 5s
#
# Each round loads, at 1 and then 16 in flight on 50 connections: the raw
# echo baseline, before forward_raw, after forward_raw, before json, after
# json; every row reports its server process's CPU per request (bench -pid).
# Sessions log in first (bench -login); LOGIN=0 runs them without, as
# before login (SPEC §5: a session's frames then reach its service one at
# a time). With FANOUT=N, each round also pushes to a room of N members of
# each build's fan service and of the plain Go loop (each a process of its
# own); with IDLE=N, each build in a fresh process holds N idle sessions.
# INFLIGHT (default "1 16") and ROUTES (default "1 2": forward_raw, json)
# choose the rows; BASELINE=0 leaves out the raw echo. So many short
# rounds of one row load the two builds in turn, the way to compare two
# builds closer than the machine's noise between rounds:
#   INFLIGHT=16 ROUTES=1 BASELINE=0 bench/compare.sh A B 6 5s
# TAIL=D adds, under each row, how its answers slower than D spread over
# the measured time: evenly, or in bursts (bench -tail).
# PIN=1 runs every server on CPU 0 and every load on CPU 1 (taskset), so
# that the load generator never takes a server's CPU: the way to see what
# of a tail latency is the two processes sharing the CPUs.
# The AFTER binary is the load tool.
set -eu
before=$1 after=$2 rounds=${3:-3} dur=${4:-5s}
login=${LOGIN:-3} fanout=${FANOUT:-0} idle=${IDLE:-0}
inflight=${INFLIGHT:-1 16} routes=${ROUTES:-1 2} baseline=${BASELINE:-1} tail=${TAIL:-0}
srv="" cli=""
if [ "${PIN:-0}" = 1 ]; then
	srv="taskset -c 0" cli="taskset -c 1"
fi
tmp=$(mktemp -d)
pids=""
# Under set -e a failing command ends a trap too: kill fails for the
# servers stop already ended, and the temp dir must still go.
trap 'kill $pids 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT INT TERM
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
echo_addr=127.0.0.1:$(port)
$srv "$after" bench -serve-echo "$echo_addr" >/dev/null &
pid_echo=$!
pids="$pids $pid_echo"
fan_base=127.0.0.1:$(port)
$srv "$after" bench -serve-fan "$fan_base" >/dev/null &
pids="$pids $!"
start() { # name binary -> sets addr_<name>, fan_<name>, pid_<name>
	a=127.0.0.1:$(port) f=127.0.0.1:$(port) m=127.0.0.1:$(port)
	mkdir -p "$tmp/$1"
	cfg=$("$after" bench -write-config "$tmp/$1" -listen "$a" -fan-listen "$f" -admin "$m")
	$srv "$2" run -c "$cfg" 2>"$tmp/$1.log" &
	eval "pid_$1=$! addr_$1=$a fan_$1=$f admin_$1=$m"
	pids="$pids $!"
	i=0
	until curl -sf "http://$m/readyz" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || {
			echo "$1 did not start:"
			cat "$tmp/$1.log"
			exit 1
		}
		sleep 0.1
	done
}
stop() { # name
	eval "kill \$pid_$1; wait \$pid_$1 2>/dev/null || true"
}
load() { # label addr route pid login
	for d in $inflight; do
		$cli "$after" bench -addr "$2" -route "$3" -inflight $d -d "$dur" -warmup 1s -pid "$4" -login "$5" -tail "$tail" |
			sed "s/^gateway  */$(printf '%-20s' "$1") /"
	done
}
start before "$before"
start after "$after"
echo "login route $login; $(nproc) CPUs; pinned ${PIN:-0}; $(uptime)"
for r in $(seq "$rounds"); do
	echo "round $r"
	[ "$baseline" = 0 ] || load "baseline echo" "$echo_addr" 1 "$pid_echo" 0
	for route in $routes; do
		name=forward_raw
		[ "$route" = 2 ] && name=json
		load "before $name" "$addr_before" "$route" "$pid_before" "$login"
		load "after $name" "$addr_after" "$route" "$pid_after" "$login"
	done
	if [ "$fanout" -gt 0 ]; then
		for b in before after; do
			eval "fa=\$fan_$b"
			$cli "$after" bench -fanout "$fanout" -addr "$fa" -fan-base "$fan_base" -d "$dur" -warmup 1s -inflight 1,16 |
				sed "s/^gateway fan-out /$b fan-out  /"
		done
	fi
done
stop before
stop after
if [ "$idle" -gt 0 ]; then
	for b in before after; do
		eval "bin=\$$b"
		start "idle_$b" "$bin"
		eval "a=\$addr_idle_$b p=\$pid_idle_$b m=\$admin_idle_$b"
		printf '%-8s ' "$b"
		$cli "$after" bench -idle "$idle" -addr "$a" -pid "$p" -admin "$m" -login "$login"
		stop "idle_$b"
	done
fi
