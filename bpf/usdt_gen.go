// SPDX-License-Identifier: Apache-2.0

package bpf

// The USDT probe-pair programs of `tickprof time -u 'usdt:...'` and
// 'py:...': entry and return programs on two probes' nops, sharing
// timing.h's counters and the thread's entry stack, with an optional
// filter on two string arguments (CPython's function and file names).
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 -type ut_target -type ut_arg -type ut_pylayout Usdt usdt.bpf.c
