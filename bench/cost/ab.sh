#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Interleaved A/B rounds of `tickprof sample -F 999 -p PID --duration 5s`
# between builds (and perf record -g, named "perf"), on one running
# target: A B C, then C B A, and so on. Each run's peak RSS and user +
# system CPU come from the kernel's accounting (GNU time's %M, %U, %S).
#
#   bench/cost/ab.sh ROUNDS LABEL PID BIN... > runs.txt
#
# Each line: LABEL ROUND BIN rssMiB=... cpu=... wall=... load=... (the
# 1-minute load average when the run started), BIN as its last two path
# elements.
#
# Start the target first (e.g. testdata/sample/frameless.c built as
# bench/cost does, run for longer than the rounds take). Root.
set -euo pipefail
rounds=$1 label=$2 pid=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
	bins=("$@")
	if ((r % 2 == 0)); then mapfile -t bins < <(printf '%s\n' "$@" | tac); fi
	for b in "${bins[@]}"; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		if [ "$b" = perf ]; then
			cmd=(perf record -q -F 999 -g -p "$pid" -o "$out/perf.data" -- sleep 5)
			name=perf
		else
			cmd=("$b" sample -F 999 -p "$pid" --duration 5s -o "$out/s.pb.gz")
			name=$(basename "$(dirname "$b")")/$(basename "$b")
		fi
		/usr/bin/time -f "%M %U %S %e" -o "$out/time" "${cmd[@]}" >"$out/log" 2>&1 || { echo "failed: $b" >&2; tail -3 "$out/log" >&2; continue; }
		read -r kb u s e <"$out/time"
		echo "$label $r $name rssMiB=$(echo "scale=1; $kb / 1024" | bc) cpu=$(echo "$u + $s" | bc) wall=$e load=$load"
	done
done
