#!/usr/bin/env bash
# make bench-usdt, part 2: the cost per Python call of timing with USDT
# probes, against sys.setprofile and cProfile on the same program
# (bench/usdt/pycost.py: an empty function called in a loop), in ROUNDS
# rounds (default 7) that run every variant once each, interleaved:
#   plain        /usr/bin/python3.11 (Debian's, built --with-dtrace)
#   setprofile   a no-op sys.setprofile hook
#   cprofile     cProfile enabled
#   usdt-return  tickprof time -u 'usdt:/usr/bin/python3.11:python:function'
#                attached: CPython 3.11 fires function__return on every
#                call (with its arguments computed, its semaphore set) and
#                function__entry only for calls from C (gh-98894), so this
#                is one probe per call, the return side of a working pair
# and on CPython 3.12 (PY312, default pyenv's), the eval-loop route:
#   312-plain, 312-setprofile, 312-cprofile   as above
#   312-perf     run with -X perf (its perf trampolines, which the route needs)
#   312-py       the same with tickprof time -u py:pycost.nothing attached:
#                a uprobe and a uretprobe on every Python call, the filter
#                rejecting it
# and, on testdata/c/usdt.c's calls shaped as CPython's (cost mode), the
# whole pair that `py:` puts on every Python call (entry and return probes,
# the name filter rejecting the call):
#   c-plain      no tracer
#   c-py         tickprof time -u py:pkg.mod.target attached
# Prints the median ns per call of each and its range over the rounds.
# Needs root, gcc, <sys/sdt.h> and /usr/bin/python3.11.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-7}
N=${N:-2000000}
GO=${GO:-go}
PY=${PY:-/usr/bin/python3.11}
PY312=${PY312:-$(ls -d "$HOME"/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | head -1)}
variants="plain setprofile cprofile usdt-return c-plain c-py"
[ -n "$PY312" ] && variants="$variants 312-plain 312-setprofile 312-cprofile 312-perf 312-py"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p bin
"$GO" build -o bin/tickprof ./cmd/tickprof
gcc -O1 -g -o "$out/usdt" testdata/c/usdt.c
tp() { bin/tickprof time --no-correct --interval 1s -u "$1" -- "${@:2}" 2>/dev/null | sed -n 's/^ns_per_call=//p'; }
for ((r = 1; r <= ROUNDS; r++)); do
	for v in $variants; do
		case $v in
		312-plain | 312-setprofile | 312-cprofile) x=$("$PY312" bench/usdt/pycost.py "${v#312-}" "$N" | sed 's/ns_per_call=//') ;;
		312-perf) x=$("$PY312" -X perf bench/usdt/pycost.py plain "$N" | sed 's/ns_per_call=//') ;;
		312-py) x=$(tp py:pycost.nothing "$PY312" -X perf bench/usdt/pycost.py plain "$N") ;;
		plain | setprofile | cprofile) x=$("$PY" bench/usdt/pycost.py "$v" "$N" | sed 's/ns_per_call=//') ;;
		usdt-return) x=$(tp "usdt:$PY:python:function" "$PY" bench/usdt/pycost.py plain "$N") ;;
		c-plain) x=$("$out/usdt" cost "$N" | sed 's/ns_per_call=//') ;;
		c-py) x=$(tp py:pkg.mod.target "$out/usdt" cost "$N") ;;
		esac
		echo "$v $x" >>"$out/all"
	done
done
echo "| variant | ns per call, median | range over $ROUNDS rounds |"
echo "|---|---|---|"
for v in $variants; do
	awk -v v="$v" '$1 == v { print $2 }' "$out/all" | sort -g | awk -v v="$v" '{ x[++n] = $1 } END {
		m = (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
		printf "| %s | %.0f | %.0f–%.0f |\n", v, m, x[1], x[n] }'
done
