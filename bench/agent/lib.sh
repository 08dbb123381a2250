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
