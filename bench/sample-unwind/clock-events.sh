#!/bin/bash
# Why tickprof and `perf record -p` disagree on redis-server's shares:
# samples one redis-benchmark run at 999 Hz with three profilers at once —
# tickprof (per-CPU cpu-clock events), perf record -p (per-task cpu-clock
# events) and perf record -a (per-CPU, filtered to redis-server afterwards) —
# and prints the cumulative shares of the syscalls redis spends its time in.
# Usage: bench/sample-unwind/clock-events.sh TICKPROF_BINARY
set -euo pipefail
tp=${1:?usage: clock-events.sh TICKPROF_BINARY}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=16399
redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --protected-mode yes >/dev/null &
srv=$!
sleep 1
"$tp" sample -F 999 -p $srv -o "$dir/tp.pb.gz" --top 0 >"$dir/tp.log" 2>&1 &
p1=$!
perf record -q -e cpu-clock -F 999 -g -o "$dir/task.data" -p $srv 2>"$dir/task.log" &
p2=$!
perf record -q -e cpu-clock -F 999 -g -a -o "$dir/all.data" 2>"$dir/all.log" &
p3=$!
sleep 3 # all three started before the load begins
redis-benchmark -h 127.0.0.1 -p $port -q -n 150000 -c 20 -t set,get,incr,lpush,lpop,sadd,hset,zadd,lrange_100 >/dev/null 2>&1
kill -INT $p1 $p2 $p3
wait $p1 $p2 $p3 || true
kill $srv
echo "| profiler | samples | ksys_write | do_epoll_wait | ksys_read | do_syscall_64 |"
echo "|---|---|---|---|---|---|"
for f in task all; do
	perf script -i "$dir/$f.data" --pid $srv -F pid,ip,sym 2>/dev/null | awk -v f="$f" '
		function tally() { if (n) { w += sw; e += se; r += sr; d += sd } sw = se = sr = sd = 0 }
		/^ *[0-9]+ *$/ { tally(); n++; next }
		/ ksys_write/ { sw = 1 } / do_epoll_wait/ { se = 1 } / ksys_read/ { sr = 1 } / do_syscall_64/ { sd = 1 }
		END { tally(); name = (f == "task") ? "perf record -p (per-task clock)" : "perf record -a (per-CPU clock)"
		      printf "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", name, n, 100*w/n, 100*e/n, 100*r/n, 100*d/n }'
done
go tool pprof -top -cum "$dir/tp.pb.gz" 2>/dev/null | awk '
	/ ksys_write$/ { w = $5 } / do_epoll_wait$/ { e = $5 } / ksys_read$/ { r = $5 } / do_syscall_64$/ { d = $5 }
	END { printf "| tickprof sample (per-CPU clock) | | %s | %s | %s | %s |\n", w, e, r, d }'
