#!/usr/bin/env bash
# Target slowdown of stack sampling with call-frame-information unwinding
# (a copy of the user stack per sample), against frame-pointer sampling and
# `perf record --call-graph dwarf` at the same rate (root), as a paired
# comparison over many short rounds.
#
# Each round runs the same fixed work (workload/qsortwork.c, built -O2
# -fomit-frame-pointer: libc's qsort, which Debian builds without frame
# pointers, calling back into a comparator; cache-resident; stopped after
# exec until the profiler is attached) once unprofiled (A) and, at each
# rate, under `tickprof sample --user-stack 0` (frame pointers only, B),
# under `tickprof sample` (the default stack copy unwound by call frame
# information, C) and under `perf record -F HZ -e cpu-clock --call-graph
# dwarf -p` (D), all in a random order. The work's own CPU time
# (CLOCK_PROCESS_CPUTIME_ID: the sampling interrupts, BPF programs and
# stack copies run in its context and are charged to it) is compared within
# the round: per round, X - Y over A for each pair, and the mean over rounds
# with a Student t interval (bench/agent/lib.sh's paired_table). Usage:
#   bench/sample-unwind/slowdown.sh [ROUNDS]   (default 60)
# Env: HZ (rates, "99 999"), WORK (sorts per run, 600: about 0.8 s of
# CPU), CONF (0.95), RAW (a file to keep the per-round CPU times in: the
# round, A, then B C D for each rate). Prints a Markdown section on
# stdout; about 12 s per round with two rates on an idle machine
# (`make bench-unwind`).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-60}
HZ=${HZ:-"99 999"}
WORK=${WORK:-600}
CONF=${CONF:-0.95}
. bench/agent/lib.sh
# At nice -15 with everything it starts (as bench/budget/run.sh), so that
# other work on the machine preempts the runs less.
renice -n -15 $$ >/dev/null
command -v perf >/dev/null || { echo "bench/sample-unwind: perf not installed (apt-get install linux-perf)" >&2; exit 1; }
gcc -O2 -fomit-frame-pointer -o "$tmp/qsortwork" bench/sample-unwind/workload/qsortwork.c
go build -o "$tmp/tickprof" ./cmd/tickprof

run_A() {
	held "$tmp/qsortwork" "$WORK"
	finish "$t"
}
# tickprof_run HZ FLAGS...: the work under tickprof sample.
tickprof_run() {
	local s hz=$1
	shift
	held "$tmp/qsortwork" "$WORK"
	"$tmp/tickprof" sample -F "$hz" -p "$t" -o "$tmp/cpu.pb.gz" --top 1 "$@" >"$tmp/slog" 2>&1 &
	s=$!
	# Sampling has started when tickprof holds its per-CPU cpu-clock events.
	until [ "$(perf_fds "$s")" -ge "$(nproc)" ]; do sleep 0.05; done
	finish "$t"
	wait "$s" || { echo "tickprof sample failed:" >&2; cat "$tmp/slog" >&2; exit 1; }
}
run_B() { tickprof_run "$1" --user-stack 0; }
run_C() { tickprof_run "$1"; }
run_D() {
	local p
	held "$tmp/qsortwork" "$WORK"
	perf record -q -F "$1" -e cpu-clock --call-graph dwarf -p "$t" -o "$tmp/perf.data" 2>/dev/null &
	p=$!
	until [ "$(perf_fds "$p")" -ge 1 ]; do sleep 0.05; done
	finish "$t"
	wait "$p" 2>/dev/null || true # perf ends by itself when the work exits
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u +%FT%TZ)
raw=${RAW:-$tmp/raw}
: >"$raw"
keys=("A 0") # run_A takes no rate
for h in $HZ; do keys+=("B $h" "C $h" "D $h"); done
for r in $(seq "$N"); do
	declare -A cpu=()
	while read -r k h; do
		cpu["$k $h"]=$("run_$k" "$h")
	done < <(printf '%s\n' "${keys[@]}" | shuf)
	line="$r"
	for k in "${keys[@]}"; do line+=" ${cpu[$k]}"; done
	echo "$line" >>"$raw"
	echo "round $r/$N ($(cut -d' ' -f1 /proc/loadavg)): $line" >&2
done

echo "## Stack sampling: target slowdown of call-frame-information unwinding (paired rounds)"
echo
echo "bench/sample-unwind/slowdown.sh $N, $start, $(nproc) CPUs, kernel $(uname -r), $WORK sorts per run (workload/qsortwork.c); load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end. Each round runs the fixed work unprofiled (A) and, at each rate, under \`tickprof sample --user-stack 0\` (frame pointers only, B), \`tickprof sample\` (a copy of up to 28 KiB of the user stack unwound by call frame information, C) and \`perf record -e cpu-clock --call-graph dwarf -p\` (D), in a random order; the work's own CPU time is compared within the round, and the interval is Student's t over rounds."
j=0
for h in $HZ; do
	b=$((3 + 3 * j)) c=$((4 + 3 * j)) d=$((5 + 3 * j))
	echo
	echo "At $h Hz:"
	echo
	paired_table "$CONF" "$raw" "frame pointers (B/A - 1)|$b|2|2" "stack copy, CFI (C/A - 1)|$c|2|2" \
		"\`perf --call-graph dwarf\` (D/A - 1)|$d|2|2" "stack copy - frame pointers ((C - B)/A)|$c|$b|2" \
		"stack copy - perf ((C - D)/A)|$c|$d|2"
	j=$((j + 1))
done
echo
awk '{ base += $2; n++ } END { printf "Unprofiled work: %.3f s of CPU on average over %d rounds.\n", base / n / 1e9, n }' "$raw"
