#!/usr/bin/env bash
# The agent's footprint against perf's (root): own CPU and RSS of
# `tickprof agent -p` and of `perf record -F 49 -g -p` on the same busy
# targets, one and twenty CPU-bound processes (bench/sample/target.c), at
# 49 Hz, 10 s windows to a directory. Each repetition measures, for each
# number of targets, both tools one after the other in a random order on
# the same targets (interleaved: load that drifts is shared by the pair).
# A measurement skips the first FP_SKIP s (BPF load, the first windows'
# symbolization and the line tables it loads; default 25) and reads CPU
# (utime+stime) over FP_SECS s (default 60), then RSS (VmRSS, VmHWM; with
# RssAnon and RssFile, the file pages being the binary's text).
# With FP_BUILDS="NAME=BINARY ...", other tickprof binaries (builds before
# a change) are measured too, as tools NAME, in the same random order (A/B
# comparisons).
# Usage: bench/agent/footprint.sh [REPS] (default 3). Prints a Markdown
# section; the raw measurements go to bench/results/agent/footprint-*.tsv.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${1:-3}
SECS=${FP_SECS:-60}
SKIP=${FP_SKIP:-25}
. bench/agent/lib.sh
declare -A builds=([agent]="$tmp/tickprof")
for b in ${FP_BUILDS:-}; do builds[${b%%=*}]=${b#*=}; done

gcc -O1 -fno-omit-frame-pointer -fno-inline -o "$tmp/tpbench" bench/sample/target.c
go build -tags fleet -o "$tmp/tickprof" ./cmd/tickprof
mkdir -p bench/results/agent
raw=bench/results/agent/footprint-$(date -u +%Y%m%dT%H%M%SZ).tsv
echo -e "rep\ttargets\ttool\tcpu_pct\trss_kb\thwm_kb\tanon_kb\tfile_kb" >"$raw"

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# measure TOOL TARGETS(comma-separated PIDs) -> "cpu_pct rss hwm anon file"
measure() {
	local tool=$1 list=$2 p
	case $tool in
	perf)
		perf record -F 49 -g -p "$list" -o "$tmp/perf.data" 2>"$tmp/perf.log" >/dev/null &
		;;
	*)
		local args=()
		for t in ${list//,/ }; do args+=(-p "$t"); done
		"${builds[$tool]}" agent "${args[@]}" -F 49 --window 10s --dir "$tmp/out-agent" 2>"$tmp/agent.log" &
		;;
	esac
	p=$!
	pids+=("$p")
	sleep "$SKIP"
	local c0 w0 c1 w1
	c0=$(cpu_s "$p"); w0=$(date +%s.%N)
	sleep "$SECS"
	c1=$(cpu_s "$p"); w1=$(date +%s.%N)
	echo "$(calc %.3f "($c1 - $c0) / ($w1 - $w0) * 100") $(kb "$p" VmRSS) $(kb "$p" VmHWM) $(kb "$p" RssAnon) $(kb "$p" RssFile)"
	kill -INT "$p"
	wait "$p" || true
	rm -rf "$tmp/out-agent" "$tmp/perf.data"
}

echo "## Agent footprint against perf record"
echo
echo "${FP_BUILDS:+FP_BUILDS=\"$FP_BUILDS\" }bench/agent/footprint.sh $REPS, $(date -u +%FT%TZ), $(nproc) CPUs, kernel $(uname -r), $(perf --version), load average at start $(cut -d' ' -f1-3 /proc/loadavg); CPU over ${SECS} s after the first ${SKIP} s."
echo
for r in $(seq "$REPS"); do
	for n in 1 20; do
		tp=()
		for _ in $(seq "$n"); do
			"$tmp/tpbench" 1000000000 >/dev/null &
			tp+=("$!")
			pids+=("$!")
		done
		list=$(IFS=,; echo "${tp[*]}")
		order=$(printf '%s\n' perf "${!builds[@]}" | shuf | tr '\n' ' ')
		for tool in $order; do
			read -r c m h an fi < <(measure "$tool" "$list")
			echo -e "$r\t$n\t$tool\t$c\t$m\t$h\t$an\t$fi" >>"$raw"
		done
		for p in "${tp[@]}"; do kill "$p" 2>/dev/null || true; done
		wait "${tp[@]}" 2>/dev/null || true
	done
done

echo "| targets | tool | own CPU (% of a core) | RSS (MB) | peak RSS (MB) | anonymous (MB) | file (MB) |"
echo "|---|---|---|---|---|---|---|"
awk -F'\t' 'NR > 1 {
	k = $2 "\t" $3
	if (!(k in n)) { order[++m] = k }
	n[k]++
	cpu[k] = cpu[k] (n[k] > 1 ? ", " : "") $4
	rss[k] = rss[k] (n[k] > 1 ? ", " : "") sprintf("%.0f", $5 / 1024)
	hwm[k] = hwm[k] (n[k] > 1 ? ", " : "") sprintf("%.0f", $6 / 1024)
	an[k] = an[k] (n[k] > 1 ? ", " : "") sprintf("%.0f", $7 / 1024)
	fi[k] = fi[k] (n[k] > 1 ? ", " : "") sprintf("%.0f", $8 / 1024)
}
END {
	for (i = 1; i <= m; i++) { k = order[i]; split(k, f, "\t"); printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], cpu[k], rss[k], hwm[k], an[k], fi[k] }
}' "$raw"
echo
echo "Each cell lists the repetitions in order; raw: $raw. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
