#!/usr/bin/env bash
# make bench: build tickprof and the harness, install the tools compared
# with (bpftrace, linux-perf, libbpf-tools' funclatency) when missing, and write
# bench/results/make-bench.md.
# Needs root (BPF), gcc, and apt-get for the missing tools.
# Environment: BENCH_REPS (default 3), GO (default go).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "make bench loads BPF programs: run it as root (sudo make bench)" >&2
	exit 1
fi
missing=()
command -v bpftrace >/dev/null || missing+=(bpftrace)
command -v perf >/dev/null || missing+=(linux-perf)
command -v gcc >/dev/null || missing+=(gcc)
command -v funclatency >/dev/null || missing+=(libbpf-tools)
if [ ${#missing[@]} -gt 0 ]; then
	echo "bench: installing ${missing[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
if [ ! -d /sys/kernel/tracing/events ]; then
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi

export PATH="$PATH:/usr/local/go/bin"
GO=${GO:-go}
mkdir -p bin
"$GO" build -o bin/tickprof ./cmd/tickprof
"$GO" build -o bin/bench-harness ./bench/harness
exec bin/bench-harness -tickprof bin/tickprof -bench bench -out bench/results/make-bench.md -reps "${BENCH_REPS:-3}" "$@"
