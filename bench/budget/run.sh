#!/usr/bin/env bash
# The overhead budget's benchmark (main.go says what it measures), run at
# nice -15 with everything it starts (the target, bpftrace, funclatency),
# so that other work on the machine disturbs the throughput ratios less.
# Root; about 5 minutes with the defaults. Arguments go to the benchmark.
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
command -v "$GO" >/dev/null || GO=/usr/local/go/bin/go
bin=$(mktemp -d "${TMPDIR:-/tmp}/tickprof-bench-budget.XXXXXX")
trap 'rm -rf "$bin"' EXIT
"$GO" build -o "$bin/budget" ./bench/budget
nice -n -15 "$bin/budget" "$@"
