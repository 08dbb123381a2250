#!/usr/bin/env bash
# The agent over a long run (root): its own CPU and RSS, read every minute,
# with 20 watched processes that each run a burst of calls every 100 ms
# (bench/agent/duty.c, about 2% of a CPU each), at the default rate, with
# -u timing their work function, and 10 s windows written to --dir.
# With HOUR_BUILDS="NAME=BINARY ...", other tickprof binaries (builds
# before a change) watch the same processes at the same time, each read
# beside the agent built here (A/B over the same run).
# Usage: bench/agent/hour.sh [MINUTES] (default 65). Not part of `make
# bench` (it takes an hour); prints one line per minute (per build: CPU
# time, VmRSS, VmHWM, RssAnon, RssFile) and the agents' summaries.
set -euo pipefail
cd "$(dirname "$0")/../.."
MIN=${1:-65}
. bench/agent/lib.sh
gcc -O1 -fno-omit-frame-pointer -o "$tmp/dutyproc" bench/agent/duty.c
go build -tags fleet -o "$tmp/tickprof" ./cmd/tickprof
declare -A builds=([agent]="$tmp/tickprof") apid=()
for b in ${HOUR_BUILDS:-}; do builds[${b%%=*}]=${b#*=}; done
names=$(printf '%s\n' "${!builds[@]}" | sort | tr '\n' ' ')
for _ in $(seq 20); do
	"$tmp/dutyproc" &
	pids+=("$!")
done
for n in $names; do
	"${builds[$n]}" agent --exe dutyproc -u "$tmp/dutyproc:work" --window 10s \
		--dir "$tmp/out-$n" --dir-max-size 50MiB 2>"$tmp/agent-$n.log" &
	apid[$n]=$!
	pids+=("$!")
done
head="minute"
for n in $names; do head+=" ${n}_cpu_s ${n}_rss_kb ${n}_hwm_kb ${n}_anon_kb ${n}_file_kb"; done
echo "$head load"
for m in $(seq 0 "$MIN"); do
	line="$m"
	for n in $names; do
		a=${apid[$n]}
		line+=" $(cpu_s "$a") $(kb "$a" VmRSS) $(kb "$a" VmHWM) $(kb "$a" RssAnon) $(kb "$a" RssFile)"
	done
	echo "$line $(cut -d' ' -f1 /proc/loadavg)"
	[ "$m" -lt "$MIN" ] && sleep 60
done
for n in $names; do
	kill -TERM "${apid[$n]}"
	wait "${apid[$n]}" || { echo "$n exited with status $?" >&2; exit 1; }
	echo "$n: $(tail -2 "$tmp/agent-$n.log" | tr '\n' ' ')"
done
