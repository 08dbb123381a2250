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
#   bench/sample-unwind/slowdown.sh [ROUNDS]   (default 60; 0: report on RAW)
# Env: HZ (rates, "99 999"), WORK (sorts per run, 600: about 0.8 s of
# CPU), CONF (0.95), RAW (the file the per-round CPU times go to: the
# round, A, then B C D for each rate; RAW.n holds the samples each run
# took in the same layout, A's 0; default
# bench/results/sample-unwind/slowdown-*Hz-*.raw, HZ's rates joined by
# "-"). Prints a Markdown section on stdout;
# about 12 s per round with two rates on an idle machine (`make
# bench-unwind`).
#
# Per-sample cost: the work's extra CPU time over the samples the run took
# ((X - A)/n, n from tickprof's summary line, and perf's SAMPLE events in
# `perf report --stats` with the lost ones), in microseconds with a Student t interval over
# rounds, and the slowdown it implies at 99 and 999 Hz (n/CPU second is the
# rate: cost x rate). At 99-999 Hz the cost is far below the per-round
# noise; at high rates (HZ="4999 19999", `make bench-unwind-rate`) it is
# visible. perf's throttling (THROTTLE events, and
# kernel.perf_event_max_sample_rate before and after) is reported. The
# profilers' own user-space work runs on the other CPU and is not counted.
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

# Each run_X prints the work's CPU time (ns) and the samples taken of it.
run_A() {
	held "$tmp/qsortwork" "$WORK"
	finish "$t" >"$tmp/cpu" # not in $(...): wait needs the work as a child
	echo "$(cat "$tmp/cpu") 0"
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
	finish "$t" >"$tmp/cpu"
	wait "$s" || { echo "tickprof sample failed:" >&2; cat "$tmp/slog" >&2; exit 1; }
	echo "$(cat "$tmp/cpu") $(awk '/^tickprof: [0-9]+ samples/ { print $2; exit }' "$tmp/slog")"
}
run_B() { tickprof_run "$1" --user-stack 0; }
run_C() { tickprof_run "$1"; }
run_D() {
	local p
	held "$tmp/qsortwork" "$WORK"
	perf record -q -F "$1" -e cpu-clock --call-graph dwarf -p "$t" -o "$tmp/perf.data" 2>/dev/null &
	p=$!
	until [ "$(perf_fds "$p")" -ge 1 ]; do sleep 0.05; done
	finish "$t" >"$tmp/cpu"
	wait "$p" 2>/dev/null || true # perf ends by itself when the work exits
	perf report --stats -i "$tmp/perf.data" 2>/dev/null >"$tmp/pstat"
	# The event's own block (after "cpu-clock stats:"): its samples, and
	# those lost when perf's ring was full (they took the interrupt, not
	# the copy; counted, so that perf's cost per sample is not overstated).
	awk '/stats:$/ && !/Aggregated/ { e = 1 } /THROTTLE events:/ { th += $3 }
		e && /SAMPLE events:/ { n = $3 } e && /LOST_SAMPLES events:/ { l = $3 }
		END { print th + 0, l + 0, n + l }' "$tmp/pstat" >"$tmp/pn"
	cut -d' ' -f1-2 "$tmp/pn" >>"$tmp/throttle"
	echo "$(cat "$tmp/cpu") $(cut -d' ' -f3 "$tmp/pn")"
	rm -f "$tmp/perf.data"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
max0=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
: >"$tmp/throttle"
start=$(date -u +%FT%TZ)
# ROUNDS 0 runs nothing and reports on RAW and RAW.n as they are (chunks
# run one by one and concatenated).
if [ "$N" -eq 0 ] && [ -z "${RAW:-}" ]; then
	echo "bench/sample-unwind/slowdown.sh 0 reports on RAW: give RAW=FILE" >&2
	exit 1
fi
raw=${RAW:-bench/results/sample-unwind/slowdown-$(echo $HZ | tr ' ' -)Hz-$(date -u +%Y%m%dT%H%MZ).raw}
if [ "$N" -gt 0 ]; then mkdir -p "$(dirname "$raw")" && : >"$raw" && : >"$raw.n"; fi
kept=$raw
keys=("A 0") # run_A takes no rate
for h in $HZ; do keys+=("B $h" "C $h" "D $h"); done
for r in $(seq "$N"); do
	declare -A cpu=() smp=()
	while read -r k h; do
		read -r c n < <("run_$k" "$h")
		cpu["$k $h"]=$c smp["$k $h"]=$n
	done < <(printf '%s\n' "${keys[@]}" | shuf)
	line="$r" nline="$r"
	for k in "${keys[@]}"; do line+=" ${cpu[$k]}" nline+=" ${smp[$k]}"; done
	echo "$line" >>"$raw"
	echo "$nline" >>"$raw.n"
	echo "round $r/$N ($(cut -d' ' -f1 /proc/loadavg)): $line" >&2
done

# A run whose samples could not be counted (n 0: perf's file unreadable)
# leaves its round out of every table.
awk '{ for (i = 3; i <= NF; i++) if ($i == 0) { print $1; next } }' "$raw.n" >"$tmp/bad"
if [ -s "$tmp/bad" ]; then
	awk 'NR == FNR { bad[$1] = 1; next } !($1 in bad)' "$tmp/bad" "$raw" >"$tmp/raw.ok"
	awk 'NR == FNR { bad[$1] = 1; next } !($1 in bad)' "$tmp/bad" "$raw.n" >"$tmp/raw.ok.n"
	echo "Left out: round(s) $(paste -sd' ' "$tmp/bad") (a run's samples not counted)." >&2
	raw=$tmp/raw.ok
fi
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

# per_tables FILE B C D: the per-sample tables from FILE, a round a line
# with constant columns 2-5 (0, 100, 1e6/99, 1e6/999) and the cost per
# sample in microseconds of frame pointers, the copy and perf in columns B,
# C, D: paired_table's 100 (X - Y)/B gives microseconds (B = 100) or the
# points of slowdown at 99 or 999 Hz (B = 1e6/rate).
per_tables() {
	local f=$1 b=$2 c=$3 d=$4
	paired_table "$CONF" "$f" "frame pointers|$b|2|3" "stack copy, CFI|$c|2|3" "\`perf --call-graph dwarf\`|$d|2|3" \
		"stack copy - frame pointers|$c|$b|3" "stack copy - perf|$c|$d|3" | sed 's/quantity (points)/µs per sample/'
	echo
	paired_table "$CONF" "$f" "frame pointers, at 99 Hz|$b|2|4" "stack copy, at 99 Hz|$c|2|4" "perf dwarf, at 99 Hz|$d|2|4" \
		"stack copy - perf, at 99 Hz|$c|$d|4" "frame pointers, at 999 Hz|$b|2|5" "stack copy, at 999 Hz|$c|2|5" \
		"perf dwarf, at 999 Hz|$d|2|5" "stack copy - perf, at 999 Hz|$c|$d|5" | sed 's/quantity (points)/slowdown implied (points)/'
}
consts='$1 " 0 100 " 1e6 / 99 " " 1e6 / 999'
per="$tmp/per"
# Per round, (X - A)/n for each configuration.
paste -d' ' "$raw" "$raw.n" | awk -v k=$((1 + 3 * $(wc -w <<<"$HZ"))) "{ line = $consts"'
	for (i = 3; i <= k + 1; i++) line = line " " ($i - $2) / $(i + k + 1) / 1000
	print line }' >"$per"
j=0
for h in $HZ; do
	echo
	echo "Per sample at $h Hz ((X - A)/n, n the samples the run took, perf's lost ones included; the slowdown this implies at 99 and 999 Hz is the cost times the rate):"
	echo
	per_tables "$per" $((6 + 3 * j)) $((7 + 3 * j)) $((8 + 3 * j))
	j=$((j + 1))
done
# With two rates, the cost per added sample: per round (X2 - X1)/(n2 - n1)
# for each configuration, free of what a run costs once (attaching, the
# first sample's wakeup, the end), which (X - A)/n above includes.
if [ "$(wc -w <<<"$HZ")" -eq 2 ]; then
	paste -d' ' "$raw" "$raw.n" | awk "{ line = $consts"'
		for (i = 3; i <= 5; i++) line = line " " ($(i + 3) - $i) / ($(i + 11) - $(i + 8)) / 1000
		print line }' >"$per"
	echo
	echo "Per added sample between $(tr ' ' '/' <<<"$HZ") Hz ((X2 - X1)/(n2 - n1) per round; the slowdown at 99 and 999 Hz is this cost times the rate, plus what a run costs once):"
	echo
	per_tables "$per" 6 7 8
fi
echo
awk -v k=$((1 + 3 * $(wc -w <<<"$HZ"))) '{ for (i = 3; i <= k + 1; i++) { n[i] += $i } r++ } END {
	printf "Samples per run on average:"; for (i = 3; i <= k + 1; i++) printf " %.0f", n[i] / r; print " (B C D per rate)." }' "$raw.n"
if [ "$N" -gt 0 ]; then
	echo "perf: $(awk '{ s += $1; l += $2 } END { print s + 0 " THROTTLE events and " l + 0 " samples lost (ring full; counted in n)" }' "$tmp/throttle") over its runs; kernel.perf_event_max_sample_rate $max0 at the start, $(cat /proc/sys/kernel/perf_event_max_sample_rate) at the end."
fi
echo
echo "Per-round data (round, A, then B C D for each rate): \`$kept\` (CPU ns) and \`$kept.n\` (samples)."
