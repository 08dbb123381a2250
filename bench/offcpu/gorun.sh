#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Cost of the goroutine probes: a goroutine ping-pong over unbuffered
# channels (bench/offcpu/gopingpong: every round trip parks, readies and
# runs each goroutine once) alone and under tickprof sample --off-cpu at
# p = 0.001 (the per-park floor: three uprobes that sample nothing), p = 1
# (every park sampled) and p chosen for the 1% budget, in interleaved
# rounds (root). Prints one line per round and configuration: config,
# round, elapsed ns, round trips per second; then tickprof's goroutine
# counters and the probes' mean BPF time per run (kernel statistics, on
# for the run).
# Usage: bench/offcpu/gorun.sh [ROUNDS] [ROUND_TRIPS]
set -eu
ROUNDS=${1:-3}
N=${2:-100000}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
(cd "$top" && go build -o "$tmp/gopingpong" ./bench/offcpu/gopingpong && go build -o "$tmp/tickprof" ./cmd/tickprof)
pp="$tmp/gopingpong $N"
stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$stats; rm -rf "$tmp"' EXIT
one() { # config command...
	cfg=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	echo "$cfg $r $(awk '/^elapsed_ns/ {e=$2} /^round_trips_per_s/ {t=$2} END {print e, t}' "$tmp/out")"
	grep -h "^goroutines" "$tmp/err" | sed "s/^/$cfg /" || true
}
r=1
while [ "$r" -le "$ROUNDS" ]; do
	one base $pp
	one tickprof-p0.001 "$tmp/tickprof" sample --off-cpu --off-cpu-prob 0.001 -o "$tmp/a.pb.gz" -- $pp
	one tickprof-p1 "$tmp/tickprof" sample --off-cpu --off-cpu-prob 1 -o "$tmp/b.pb.gz" -- $pp
	one tickprof-auto "$tmp/tickprof" sample --off-cpu -o "$tmp/c.pb.gz" -- $pp
	r=$((r + 1))
done
