#!/usr/bin/env bash
# The agent over a long run (root): its own CPU and RSS, read every minute,
# with 20 watched processes that each run a burst of calls every 100 ms
# (bench/agent/duty.c, about 2% of a CPU each), at the default rate, with
# -u timing their work function, and 10 s windows written to --dir.
# Usage: bench/agent/hour.sh [MINUTES] (default 65). Not part of `make
# bench` (it takes an hour); prints one line per minute and a summary.
set -euo pipefail
cd "$(dirname "$0")/../.."
MIN=${1:-65}
. bench/agent/lib.sh
gcc -O1 -fno-omit-frame-pointer -o "$tmp/dutyproc" bench/agent/duty.c
go build -tags fleet -o "$tmp/tickprof" ./cmd/tickprof
for _ in $(seq 20); do
	"$tmp/dutyproc" &
	pids+=("$!")
done
"$tmp/tickprof" agent --exe dutyproc -u "$tmp/dutyproc:work" --window 10s \
	--dir "$tmp/out" --dir-max-size 50MiB 2>"$tmp/agent.log" &
a=$!
pids+=("$a")
echo "minute cpu_s rss_kb hwm_kb load"
for m in $(seq 0 "$MIN"); do
	echo "$m $(cpu_s "$a") $(kb "$a" VmRSS) $(kb "$a" VmHWM) $(cut -d' ' -f1 /proc/loadavg)"
	[ "$m" -lt "$MIN" ] && sleep 60
done
kill -TERM "$a"
wait "$a" || { echo "agent exited with status $?" >&2; exit 1; }
tail -2 "$tmp/agent.log"
