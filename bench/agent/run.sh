#!/usr/bin/env bash
# Agent benchmark (root): what `tickprof agent` costs at 19, 49 and 99 Hz.
#   1. Own CPU and RSS with 20 watched CPU-bound processes (--exe), pushing
#      every 10 s window to a directory: the agent's utime+stime per second of
#      wall time after its first window, and its RSS (VmRSS, VmHWM).
#   2. Target slowdown against `perf record -g` at the default rate:
#      bench/agent/slowdown.sh (SLOW_ROUNDS paired rounds, default 60).
# Usage: bench/agent/run.sh [REPS] (default 2); AGENT_SECS (default 40) is
# the length of each own-CPU run. Prints Markdown sections on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${1:-2}
SECS=${AGENT_SECS:-40}
RATES=${RATES:-"19 49 99"}
. bench/agent/lib.sh

gcc -O1 -fno-omit-frame-pointer -fno-inline -o "$tmp/tpbench" bench/sample/target.c
go build -tags fleet -o "$tmp/tickprof" ./cmd/tickprof

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

echo "## Agent: own CPU, RSS and target slowdown"
echo
echo "bench/agent/run.sh, $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg); $REPS repetitions, interleaved by rate."
echo

# 1. Own CPU and RSS with 20 watched processes.
own() { # HZ -> "cpu_percent rss_kb hwm_kb windows"
	local hz=$1 out="$tmp/out-$1" log="$tmp/log-$1"
	rm -rf "$out"
	"$tmp/tickprof" agent --exe tpbench -F "$hz" --window 10s --dir "$out" 2>"$log" &
	local a=$!
	pids+=("$a")
	# Skip the start (BPF load) and the first window.
	sleep 12
	local c0 w0 c1 w1
	c0=$(cpu_s "$a"); w0=$(date +%s.%N)
	sleep "$SECS"
	c1=$(cpu_s "$a"); w1=$(date +%s.%N)
	local rss hwm
	rss=$(kb "$a" VmRSS); hwm=$(kb "$a" VmHWM)
	kill -TERM "$a"; wait "$a" || true
	echo "$(calc %.3f "($c1 - $c0) / ($w1 - $w0) * 100") $rss $hwm $(ls "$out" | wc -l)"
}
for _ in $(seq 20); do
	"$tmp/tpbench" 100000000 >/dev/null &
	pids+=("$!")
done
declare -A owncpu rss hwm files
for r in $(seq "$REPS"); do
	for hz in $RATES; do
		read -r c m h n < <(own "$hz")
		owncpu[$hz]+="$c "; rss[$hz]+="$m "; hwm[$hz]+="$h "; files[$hz]+="$n "
	done
done
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()
range() { tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
echo "Own CPU and memory, 20 CPU-bound processes watched with \`--exe\`, 10 s windows to \`--dir\`, measured over ${SECS} s after the first window (range over runs). Budget: at most 1% of a core at the default rate; RSS at most 100 MB."
echo
echo "| rate | own CPU (% of a core) | RSS (kB) | peak RSS (kB) | window files |"
echo "|---|---|---|---|---|"
for hz in $RATES; do
	echo "| $hz Hz | $(echo "${owncpu[$hz]}" | range) | $(echo "${rss[$hz]}" | range) | $(echo "${hwm[$hz]}" | range) | $(echo "${files[$hz]}" | range) |"
done
echo

echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo

# 2. Target slowdown against perf record at the default rate: paired rounds.
bench/agent/slowdown.sh "${SLOW_ROUNDS:-60}"
