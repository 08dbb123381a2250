#!/usr/bin/env bash
# The agent's RSS over time (root): `tickprof agent -p PID -F 49 --window
# 10s --dir DIR --listen ADDR` on one busy process (bench/sample/target.c
# at nice 19), read every 30 s: VmRSS, RssAnon, RssFile, VmHWM (kB), CPU
# (utime+stime, s) and go_memstats_heap_alloc_bytes from /metrics, with
# the 1-minute load average. With RSS_BUILDS="NAME=BINARY ...", other
# tickprof binaries watch the same process at the same time, read beside
# it (A/B over the same run).
# Usage: bench/agent/rss-series.sh [MINUTES] (default 30). Not part of
# `make bench`; writes bench/results/agent/rss-series-*.txt and prints it.
set -euo pipefail
cd "$(dirname "$0")/../.."
MIN=${1:-30}
. bench/agent/lib.sh
gcc -O1 -fno-omit-frame-pointer -fno-inline -o "$tmp/tpbench" bench/sample/target.c
go build -tags fleet -o "$tmp/tickprof" ./cmd/tickprof
declare -A builds=([agent]="$tmp/tickprof") apid=() port=()
for b in ${RSS_BUILDS:-}; do builds[${b%%=*}]=${b#*=}; done
names=$(printf '%s\n' "${!builds[@]}" | sort | tr '\n' ' ')
nice -n 19 "$tmp/tpbench" 100000000000 >/dev/null &
tp=$!
pids+=("$tp")
p=19480
for n in $names; do
	port[$n]=$p
	"${builds[$n]}" agent -p "$tp" -F 49 --window 10s --dir "$tmp/out-$n" \
		--listen "127.0.0.1:$p" 2>"$tmp/agent-$n.log" &
	apid[$n]=$!
	pids+=("$!")
	p=$((p + 1))
done
mkdir -p bench/results/agent
out=bench/results/agent/rss-series-$(date -u +%Y%m%dT%H%M%SZ).txt
{
	echo "# RSS_BUILDS=\"${RSS_BUILDS:-}\" bench/agent/rss-series.sh $MIN, $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r)"
	head="sec"
	for n in $names; do head+=" ${n}_rss_kb ${n}_anon_kb ${n}_file_kb ${n}_hwm_kb ${n}_cpu_s ${n}_heap_alloc"; done
	echo "$head load1"
} >"$out"
for s in $(seq 0 30 $((MIN * 60))); do
	line="$s"
	for n in $names; do
		a=${apid[$n]}
		heap=$(curl -s "127.0.0.1:${port[$n]}/metrics" | awk '$1 == "go_memstats_heap_alloc_bytes" { printf "%.0f", $2 }')
		line+=" $(kb "$a" VmRSS) $(kb "$a" RssAnon) $(kb "$a" RssFile) $(kb "$a" VmHWM) $(cpu_s "$a") ${heap:-0}"
	done
	echo "$line $(cut -d' ' -f1 /proc/loadavg)" >>"$out"
	[ "$s" -lt $((MIN * 60)) ] && sleep 30
done
for n in $names; do
	kill -INT "${apid[$n]}"
	wait "${apid[$n]}" || { echo "$n exited with status $?" >&2; exit 1; }
done
cat "$out"
