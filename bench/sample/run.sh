#!/usr/bin/env bash
# Sampling benchmark: slowdown of a CPU-bound target under `tickprof sample`
# and under `perf record -g` at the same rates, tickprof's own CPU use, and
# the BPF cost per sample of the two stack designs (ring buffer records vs
# in-kernel stack counting). Run as root from the repository root:
#   bench/sample/run.sh [REPS]
# Each configuration runs REPS times (default 3); the minimum wall time of
# the fixed work is compared with the unprofiled minimum.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${1:-3}
ROUNDS=${ROUNDS:-6000}
export PATH="/usr/local/go/bin:$PATH"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gcc -O1 -fno-omit-frame-pointer -fno-inline -o "$tmp/target" bench/sample/target.c
go build -o "$tmp/tickprof" ./cmd/tickprof
go build -o "$tmp/samplebpf" ./bench/sample/samplebpf

# run CMD...: prints the target's minimum wall ns and minimum CPU ns of the
# fixed work over REPS runs, and the median CPU seconds (user+sys) of the
# whole command (profiler and target).
run() {
	local walls=() tcpus=() cpus=() drains=()
	for _ in $(seq "$REPS"); do
		/usr/bin/time -f "%U %S" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
		walls+=("$(awk '/^wall_ns/ {print $2}' "$tmp/out")")
		tcpus+=("$(awk '/^wall_ns/ {print $4}' "$tmp/out")")
		cpus+=("$(awk '{print $1+$2}' "$tmp/time")")
		drains+=("$(sed -n 's/.*own cost: CPU .*, \([0-9.]*\)% of a core over.*/\1/p' "$tmp/err")")
	done
	echo "$(printf '%s\n' "${walls[@]}" | sort -g | head -1)" \
		"$(printf '%s\n' "${tcpus[@]}" | sort -g | head -1)" \
		"$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "$(((REPS + 1) / 2))p")" \
		"$(printf '%s\n' "${drains[@]}" | sort -g | sed -n "$(((REPS + 1) / 2))p")"
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

read -r base base_tcpu base_cpu _ < <(run "$tmp/target" "$ROUNDS")
echo "baseline: $(calc %.3f "$base / 1e9") s wall, $(calc %.3f "$base_tcpu / 1e9") s CPU of fixed work ($ROUNDS rounds); load average $(cut -d' ' -f1 /proc/loadavg)"
echo "CPU slowdown: the target's CPU time for the fixed work (interrupt time is charged to it: no"
echo "IRQ_TIME_ACCOUNTING); wall slowdown is only meaningful on an idle machine. Own CPU: the whole"
echo "profiler command minus the target, per second of wall time (includes start-up and symbolizing);"
echo "the last column is tickprof's own report of its CPU over its life (the \"own cost\" line)."
printf '%-8s %-10s %-14s %-14s %-22s %s\n' "rate" "tool" "wall slowdown" "CPU slowdown" "own CPU (whole run)" "own CPU (reported)"
for hz in 99 999 4999; do
	read -r tw tt tcpu tdrain < <(run "$tmp/tickprof" sample -F "$hz" -o "$tmp/t.pb.gz" --top 1 -- "$tmp/target" "$ROUNDS")
	read -r pw pt pcpu _ < <(run perf record -q -F "$hz" -e cpu-clock -g -o "$tmp/perf.data" -- "$tmp/target" "$ROUNDS")
	# The command's CPU includes the target's: subtract the target's own.
	for tool in tickprof perf; do
		if [ $tool = tickprof ]; then w=$tw; t=$tt; c=$tcpu; d="$tdrain%"; else w=$pw; t=$pt; c=$pcpu; d=-; fi
		printf '%-8s %-10s %-14s %-14s %-22s %s\n' "$hz Hz" "$tool" \
			"$(calc %+.2f%% "($w / $base - 1) * 100")" \
			"$(calc %+.2f%% "($t / $base_tcpu - 1) * 100")" \
			"$(calc %.2f%% "($c - $t / 1e9) / ($w / 1e9) * 100")" "$d"
	done
done

echo
echo "BPF program cost per sample (kernel.bpf_stats_enabled), 999 Hz on the busy target:"
for mode in ringbuf stackid; do
	"$tmp/target" $((ROUNDS / 2)) >/dev/null &
	pid=$!
	"$tmp/samplebpf" -mode "$mode" -hz 999 -pid "$pid"
	wait "$pid"
done
