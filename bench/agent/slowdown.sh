#!/usr/bin/env bash
# Target slowdown under `tickprof agent` against `perf record -g` at the same
# rate (root), as a paired comparison over many short interleaved runs.
#
# Each round runs the same fixed work (bench/agent/work.c: bench/sample/
# target.c stopped after exec until the profiler is attached) three times,
# in a random order: unprofiled (A), under the agent with -p (B), under
# `perf record -F RATE -e cpu-clock -g -p` (C). The work's own CPU time
# (CLOCK_PROCESS_CPUTIME_ID: the sampling interrupts and BPF programs run in
# its context and are charged to it) is the measure. Per round r:
#   agent slowdown a_r = B/A - 1, perf slowdown p_r = C/A - 1,
#   paired difference d_r = (B - C)/A,
# and the result is the mean of each over the rounds with a Student t
# interval (rounds are independent pairs; the load drifts between rounds,
# and each round's A, B, C share it). Usage:
#   bench/agent/slowdown.sh [ROUNDS]   (default 60)
# Env: RATE (49), WORK (work rounds per run, 4000: about 0.8 s of CPU),
# CONF (0.95), RAW (the file the per-round CPU times go to; default
# bench/results/agent/slowdown-*Hz-*.raw).
# Prints a Markdown section on stdout; about 8 s per round.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-60}
RATE=${RATE:-49}
WORK=${WORK:-4000}
CONF=${CONF:-0.95}
. bench/agent/lib.sh
command -v perf >/dev/null || { echo "bench/agent: perf not installed (apt-get install linux-perf)" >&2; exit 1; }
gcc -O1 -fno-omit-frame-pointer -fno-inline -o "$tmp/tpwork" bench/agent/work.c
go build -tags fleet -o "$tmp/tickprof" ./cmd/tickprof

run_A() {
	held "$tmp/tpwork" "$WORK"
	finish "$t"
}
run_B() {
	local a
	held "$tmp/tpwork" "$WORK"
	"$tmp/tickprof" agent -p "$t" -F "$RATE" --window 10s --dir "$tmp/windows" 2>"$tmp/alog" &
	a=$!; pids+=("$a")
	# Sampling has started when the agent holds its cpu-clock events.
	until [ "$(perf_fds "$a")" -ge "$(nproc)" ]; do sleep 0.05; done
	finish "$t"
	kill -TERM "$a" 2>/dev/null || true
	wait "$a" || true
}
run_C() {
	local p
	held "$tmp/tpwork" "$WORK"
	perf record -q -F "$RATE" -e cpu-clock -g -p "$t" -o "$tmp/perf.data" 2>/dev/null &
	p=$!; pids+=("$p")
	until [ "$(perf_fds "$p")" -ge 1 ]; do sleep 0.05; done
	finish "$t"
	kill -INT "$p" 2>/dev/null || true # perf ends by itself when the work exits
	wait "$p" 2>/dev/null || true
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u +%FT%TZ)
raw=${RAW:-bench/results/agent/slowdown-${RATE}Hz-$(date -u +%Y%m%dT%H%MZ).raw}
mkdir -p "$(dirname "$raw")"
: >"$raw"
for r in $(seq "$N"); do
	declare -A cpu=()
	for k in $(printf '%s\n' A B C | shuf); do
		cpu[$k]=$("run_$k")
	done
	echo "$r ${cpu[A]} ${cpu[B]} ${cpu[C]}" >>"$raw"
	echo "round $r/$N: A ${cpu[A]} B ${cpu[B]} C ${cpu[C]} ns" >&2
done

echo "## Agent: target slowdown against \`perf record\` (paired rounds)"
echo
echo "bench/agent/slowdown.sh $N, $start, $(nproc) CPUs, kernel $(uname -r), $RATE Hz, $WORK work rounds per run; load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end. Each round runs the fixed work unprofiled (A), under \`tickprof agent -p\` (B) and under \`perf record -F $RATE -e cpu-clock -g -p\` (C) in a random order; the work's own CPU time is compared within the round, and the interval is Student's t over rounds."
echo
paired_table "$CONF" "$raw" "agent slowdown (B/A - 1)|3|2|2" "\`perf record -g\` slowdown (C/A - 1)|4|2|2" "agent - perf ((B - C)/A)|3|4|2"
echo
awk '{ base += $2; n++ } END { printf "Unprofiled work: %.3f s of CPU on average over %d rounds.\n", base / n / 1e9, n }' "$raw"
echo
echo "Per-round CPU times (round, A, B, C in ns): \`$raw\`."
