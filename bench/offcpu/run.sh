#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Slowdown of a 2-thread pipe ping-pong (about 100k context switches/s on
# 2 CPUs) under tickprof sample --off-cpu (every interval, and p chosen for
# its 1% budget), bcc's offcputime (offcputime-bpfcc, every process: the
# tool has no way to follow a command it starts) and perf sched record, in
# interleaved rounds (root). Prints one line per round and configuration:
# config, round, elapsed ns, round trips per second.
# Usage: bench/offcpu/run.sh [ROUNDS] [ROUND_TRIPS]
set -eu
ROUNDS=${1:-3}
N=${2:-200000}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -o "$tmp/pingpong" "$here/pingpong.c"
(cd "$top" && go build -o "$tmp/tickprof" ./cmd/tickprof)
pp="$tmp/pingpong $N"
one() { # config command...
	cfg=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	echo "$cfg $r $(awk '/^elapsed_ns/ {e=$2} /^round_trips_per_s/ {t=$2} END {print e, t}' "$tmp/out")"
}
r=1
while [ "$r" -le "$ROUNDS" ]; do
	one base $pp
	one tickprof-p1 "$tmp/tickprof" sample --off-cpu --off-cpu-prob 1 -o "$tmp/p1.pb.gz" -- $pp
	one tickprof-auto "$tmp/tickprof" sample --off-cpu -o "$tmp/pa.pb.gz" -- $pp
	offcputime-bpfcc -f 60 >"$tmp/bcc.out" 2>"$tmp/bcc.err" &
	bcc=$!
	sleep 3 # the tool compiles its program first
	one offcputime $pp
	kill -INT "$bcc" 2>/dev/null || true
	wait "$bcc" || true
	one perf-sched perf sched record -o "$tmp/perf.data" -- $pp
	r=$((r + 1))
done
