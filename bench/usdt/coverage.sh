#!/usr/bin/env bash
# make bench-usdt, part 1: how often `tickprof time`'s 95% interval of a
# USDT pair's mean holds the mean the target measures itself, over RUNS runs
# (default 10) of each of two patterns of testdata/c/usdt.c:
#   pair  usdt:tpusdt:work    a 20 µs spin between its probes, back to back
#   py    py:pkg.mod.target   probes shaped as CPython's, filtered by name
#                             and file: a 20 µs body that recurses to depth 3
#                             and calls another "Python function" twice
#   eval  py:timed.work        CPython 3.12 run with -X perf (PY312, default
#                             pyenv's), timed in its eval loop:
#                             testdata/py/timed.py, a function measuring
#                             itself, called directly and from a recursion
# with the machine's calibration (tickprof calibrate, when it has one) and
# tickprof's defaults otherwise. Prints a Markdown table; every run's
# figures go to bench/results/usdt-coverage-*.tsv.
# Needs root, gcc and <sys/sdt.h> (systemtap-sdt-dev).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-10}
GO=${GO:-go}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p bin bench/results
"$GO" build -o bin/tickprof ./cmd/tickprof
gcc -O1 -g -fno-omit-frame-pointer -o "$out/usdt" testdata/c/usdt.c
raw=bench/results/usdt-coverage-$(date -u +%Y%m%dT%H%MZ).tsv
printf 'case\trun\tcalls\ttruth_ns\tmean_ns\tlow_ns\thigh_ns\traw_mean_ns\toverhead_ns\tcorrection\tcovered\n' >"$raw"
PY312=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | head -1)}
modes="pair py"
[ -n "$PY312" ] && modes="$modes eval"
declare -A probe=([pair]="usdt:tpusdt:work" [py]="py:pkg.mod.target" [eval]="py:timed.work")
declare -A held
for ((i = 1; i <= RUNS; i++)); do
	for mode in $modes; do
		rm -f "$out/truth" "$out/run.json"
		case $mode in
		pair) cmd=("$out/usdt" pair 100000) ;;
		py) cmd=("$out/usdt" py 12000) ;;
		eval) cmd=("$PY312" -X perf testdata/py/timed.py 5 "$out/truth") ;;
		esac
		TIMED_OUT="$out/truth" bin/tickprof time --json "$out/run.json" -u "${probe[$mode]}" -- \
			"${cmd[@]}" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
		truth=$(sed -n 's/.*inner_mean_ns=\([0-9.]*\).*/\1/p' "$out/truth")
		row=$(jq -r --argjson truth "$truth" '.overhead_correction as $c | .targets[0] |
			[.calls, $truth, .mean_ns, .low_ns, .high_ns, (.raw_mean_ns // .mean_ns), (.overhead_ns // 0), $c,
			 (if .low_ns <= $truth and $truth <= .high_ns then "yes" else "no" end)] | @tsv' "$out/run.json")
		printf '%s\t%d\t%s\n' "$mode" "$i" "$row" >>"$raw"
		[ "$(cut -f9 <<<"$row")" = yes ] && held[$mode]=$((${held[$mode]:-0} + 1))
	done
done
echo "| case | runs | interval held the truth | calls per run | truth (mean of runs) | tickprof mean (mean of runs) |"
echo "|---|---|---|---|---|---|"
for mode in $modes; do
	awk -F'\t' -v m="$mode" -v held="${held[$mode]:-0}" 'NR > 1 && $1 == m { n++; c += $3; t += $4; e += $5 }
		END { printf "| %s | %d | %d of %d | %.0f | %.1f µs | %.1f µs |\n", m, n, held, n, c / n, t / n / 1000, e / n / 1000 }' "$raw"
done
echo
echo "(every run: $raw)"
