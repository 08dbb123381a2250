# Shared by bench/agent's scripts (sourced, from the repository root): a
# temporary directory and the processes to kill on exit, and readers of a
# process's CPU time and memory.
export PATH="/usr/local/go/bin:$PATH"
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
ticks=$(getconf CLK_TCK)
# cpu_s PID: utime+stime of PID in seconds.
cpu_s() { awk -v t="$ticks" '{ sub(/.*\) /, ""); split($0, f, " "); print (f[12] + f[13]) / t }' "/proc/$1/stat"; }
# kb PID FIELD: a kB field of /proc/PID/status (VmRSS, VmHWM).
kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }

# held CMD...: start a work that stops itself (SIGSTOP) right after exec and
# prints "wall_ns N cpu_ns N" when done (bench/agent/work.c,
# bench/sample-unwind/workload/qsortwork.c), as a child of this shell so
# that finish can wait for it; its PID is in $t once it is stopped.
held() {
	"$@" >"$tmp/out" &
	t=$!
	until grep -q '^State:.*T' "/proc/$t/status" 2>/dev/null; do sleep 0.01; done
}
# finish PID: let the held work run, wait for it, print its CPU time (ns).
finish() {
	kill -CONT "$1"
	wait "$1"
	awk '/^wall_ns/ { print $4 }' "$tmp/out"
}
# perf_fds PID: the perf events PID holds open.
perf_fds() { ls -l "/proc/$1/fd" 2>/dev/null | grep -c 'perf_event' || true; }

# paired_table CONF RAW ROW...: the Markdown table of paired rounds. RAW
# holds one round a line (the round's number, then one CPU time per
# configuration); each ROW is "label|X|Y|B" with X, Y, B column numbers of
# RAW, and its line is the mean over rounds of 100 (X - Y) / B (points of
# slowdown, with B the round's unprofiled run), with a Student t interval
# over the rounds (they are independent pairs: load that drifts between
# rounds is shared by the runs of one round).
paired_table() {
	local conf=$1 raw=$2
	shift 2
	awk -v conf="$conf" -v rows="$(printf '%s\n' "$@")" '
	# t quantile (two-sided conf, df degrees of freedom) by the
	# Cornish-Fisher expansion of Student t around the normal quantile
	# (Abramowitz and Stegun 26.7.5; within 0.1% of the exact quantile from
	# df = 10 on).
	function z(p,   t) { # normal quantile, Abramowitz and Stegun 26.2.23 (|error| < 4.5e-4)
		t = sqrt(-2 * log(1 - p))
		return t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)
	}
	function tq(p, df,   x) {
		x = z(p)
		return x + (x^3 + x) / (4 * df) + (5 * x^5 + 16 * x^3 + 3 * x) / (96 * df^2) + (3 * x^7 + 19 * x^5 + 17 * x^3 - 15 * x) / (384 * df^3)
	}
	BEGIN {
		k = split(rows, row, "\n")
		for (i = 1; i <= k; i++) { split(row[i], f, "|"); lab[i] = f[1]; cx[i] = f[2]; cy[i] = f[3]; cb[i] = f[4] }
	}
	{ for (i = 1; i <= k; i++) { d = 100 * ($cx[i] - $cy[i]) / $cb[i]; s[i] += d; ss[i] += d * d }; n++ }
	END {
		printf "| quantity (points) | mean | %g%% interval | half-width | sd over rounds |\n", conf * 100
		print "|---|---|---|---|---|"
		for (i = 1; i <= k; i++) {
			m = s[i] / n; sd = sqrt((ss[i] - n * m * m) / (n - 1)); h = tq(1 - (1 - conf) / 2, n - 1) * sd / sqrt(n)
			printf "| %s | %+.2f | [%+.2f, %+.2f] | ±%.2f | %.2f |\n", lab[i], m, m - h, m + h, h, sd
		}
	}' "$raw"
}
