#!/bin/bash
# BPF program time (root; run from anywhere, make bench runs it):
# 1. per getppid, tickprof's raw-syscall programs with the jiffies clock,
#    the ns clock, and the ns clock with the quantile histograms, against
#    an empty program measured the same way, 9 iterations with the
#    configurations in turn, and the histograms' cost paired by iteration
#    (the raw syscall programs run for every process's syscalls, so these
#    per-run figures are diluted by other processes' calls);
# 2. one quantile-histogram update on its own (BPF_PROG_TEST_RUN loops with
#    and without it, A B A B, 30 batches).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench SyscallProgramTime -benchtime=9x ./internal/loader/ 2>&1 |
	grep -E 'ns of BPF work per syscall|paired by iteration|prog-ns/call' |
	sed -e 's/^ *syscall_bench_test.go:[0-9]*: //'
go test -run '^$' -bench QhistUpdate -benchtime=1x ./bench/qhist/ 2>&1 |
	grep -E 'ns/update|histogram update' | sed -e 's/^ *qhbench_test.go:[0-9]*: //'
