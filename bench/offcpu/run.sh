#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Slowdown of a 2-thread pipe ping-pong (about 100k context switches/s on
# 2 CPUs) under tickprof sample --off-cpu (every interval, and p chosen for
# its 1% budget), libbpf-tools' offcputime (every process: it cannot start
# a command; bcc's offcputime-bpfcc needs the kernel's headers, which this
# machine lacks) and perf sched record, in interleaved rounds (root).
# Prints one line per round and configuration: config, round, elapsed ns,
# round trips per second; then the off-CPU programs' mean cost per run
# from the kernel's BPF statistics, which it enables for the run.
# Usage: bench/offcpu/run.sh [ROUNDS] [ROUND_TRIPS]
set -eu
ROUNDS=${1:-3}
N=${2:-200000}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
cc -O2 -pthread -o "$tmp/pingpong" "$here/pingpong.c"
(cd "$top" && go build -o "$tmp/tickprof" ./cmd/tickprof)
pp="$tmp/pingpong $N"
stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$stats; rm -rf "$tmp"' EXIT
# cost NAME PID: the mean run time (ns) of the BPF programs process PID
# holds, from their fdinfo (run_time_ns, run_cnt), as "cost NAME ns runs".
cost() {
	for fd in /proc/"$2"/fdinfo/*; do
		awk '/^run_time_ns/ {t=$2} /^run_cnt/ {c=$2} END {if (c > 0) print t, c}' "$fd"
	done | awk -v n="$1" '{t+=$1; c+=$2} END {if (c > 0) printf "cost %s %.0f %d\n", n, t/c, c}'
}
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
	grep -h "off-CPU program" "$tmp/err" | sed 's/^/tickprof-p1 /'
	one tickprof-auto "$tmp/tickprof" sample --off-cpu -o "$tmp/pa.pb.gz" -- $pp
	grep -h "off-CPU program\|^off-CPU:" "$tmp/err" | sed 's/^/tickprof-auto /' 
	offcputime 60 >"$tmp/oct.out" 2>"$tmp/oct.err" &
	oct=$!
	sleep 1 # the tool loads its program first
	kill -0 "$oct" || { cat "$tmp/oct.err" >&2; exit 1; }
	one offcputime $pp
	cost offcputime "$oct"
	kill -INT "$oct" 2>/dev/null || true
	wait "$oct" || true
	one perf-sched perf sched record -o "$tmp/perf.data" -- $pp
	r=$((r + 1))
done
