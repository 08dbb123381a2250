// SPDX-License-Identifier: Apache-2.0

// Package qhist measures what one update of the quantile histogram
// (bpf/qhist.h) costs in BPF: BenchmarkQhistUpdate runs the programs of
// qhbench.bpf.c, which include the product's timing.h, with the kernel's
// run-time statistics.
//
//	go test -run '^$' -bench QhistUpdate -benchtime 1x ./bench/qhist/
package qhist

// Generated: qhbench_x86_bpfel.go and .o; `make generate` rebuilds them.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Qhbench qhbench.bpf.c -- -I../../bpf
