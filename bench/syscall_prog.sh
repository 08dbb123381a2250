#!/bin/bash
# BPF program time per getppid of tickprof's raw-syscall programs (jiffies,
# ns, ns with the quantile histograms), against an empty program measured
# the same way, 9 iterations with the configurations in turn; ends with the
# histogram update's cost paired by iteration. Root. Run from the
# repository root (make bench runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench SyscallProgramTime -benchtime=9x ./loader/ 2>&1 |
	grep -E 'ns of BPF work per syscall|paired by iteration|prog-ns/call' |
	sed -e 's/^ *syscall_bench_test.go:[0-9]*: //'
