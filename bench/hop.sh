#!/bin/sh
# hop.sh measures the cluster's hop (SPEC §10, docs/cluster.md): the echo
# config served by one gateway process, then by a gateway node that hosts
# no service and a service node hosting them (two processes, the gateway
# embedding the NATS server), both loaded in turn by the same lean
# generator with logged-in sessions (bench -login), at 1 and 16 in flight
# on 50 connections. Every row reports the CPU per request of the loaded
# gateway process and, for the cluster, of the service node (node cpu).
#
#   bench/hop.sh BINARY [ROUNDS] [DURATION]
#
# e.g. go build -o /tmp/gw ./cmd/gateway && bench/hop.sh /tmp/gw 2 5s
# LOAD=BINARY loads with another build's generator (one that has -node-pid,
# when BINARY is older); INFLIGHT (default "1 16") and ROUTE (default 1,
# forward_raw) choose the rows.
set -eu
bin=$1 rounds=${2:-2} dur=${3:-5s} loadbin=${LOAD:-$1}
inflight=${INFLIGHT:-1 16} route=${ROUTE:-1}
tmp=$(mktemp -d)
pids=""
trap 'kill $pids 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT INT TERM
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
ready() { # admin name
	i=0
	until curl -sf "http://$1/readyz" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || {
			echo "$2 did not become ready:"
			cat "$tmp/$2.log"
			exit 1
		}
		sleep 0.1
	done
}
# config NAME NODE_LINE CLUSTER_LINE -> the echo config in $tmp/NAME, its
# node line replaced; sets addr_NAME and admin_NAME.
config() {
	a=127.0.0.1:$(port) f=127.0.0.1:$(port) m=127.0.0.1:$(port)
	mkdir -p "$tmp/$1"
	cfg=$("$bin" bench -write-config "$tmp/$1" -listen "$a" -fan-listen "$f" -admin "$m")
	sed -i "s|^node: {name: bench}\$|$2\n$3|" "$cfg"
	eval "addr_$1=$a admin_$1=$m cfg_$1=$cfg"
}
run() { # NAME -> pid_NAME
	eval "c=\$cfg_$1 m=\$admin_$1"
	"$bin" run -c "$c" 2>"$tmp/$1.log" &
	eval "pid_$1=$!"
	pids="$pids $!"
	ready "$m" "$1"
}
nats=127.0.0.1:$(port)
config one "node: {name: one}" ""
config gw "node: {name: gw, services: []}" "cluster: {embedded: \"$nats\"}"
config svc "node: {name: svc, services: [echo, fan]}" "cluster: {nats: \"nats://$nats\"}"
run one
run gw
run svc
sleep 2 # a heartbeat: each node has heard of the other
load() { # label addr pid [node pid]
	for d in $inflight; do
		extra=""
		[ $# -lt 4 ] || extra="-node-pid $4"
		"$loadbin" bench -addr "$2" -route "$route" -inflight "$d" -d "$dur" -warmup 1s -pid "$3" -login 3 $extra |
			sed "s/^gateway  */$(printf '%-16s' "$1") /"
	done
}
echo "route $route; $(nproc) CPUs; $(uptime)"
for r in $(seq "$rounds"); do
	echo "round $r"
	load "one process" "$addr_one" "$pid_one"
	load "gateway->svc" "$addr_gw" "$pid_gw" "$pid_svc"
done
# The gateway node's NATS messages per client frame over every cluster row
# (the logins' too), each way: at most 1, less when batched.
curl -s "http://$admin_gw/metrics" | awk '
	/^shield_requests_total/ { frames += $NF }
	/^shield_cluster_messages_total\{dir="out",kind="ingress"\}/ { out = $NF }
	/^shield_cluster_messages_total\{dir="in",kind="answer"\}/ { in_ = $NF }
	END { if (frames > 0) printf "messages per frame on the gateway node: %.3f ingress out, %.3f answers in (%d frames)\n", out / frames, in_ / frames, frames }'

