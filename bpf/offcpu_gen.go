// SPDX-License-Identifier: Apache-2.0

package bpf

// The off-CPU program of `tickprof sample --off-cpu` and `--wall`:
// off_switch on the raw tracepoint sched_switch. Generated:
// offcpu_x86_bpfel.go and .o.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 -type off_hdr -type sample_hdr OffCPU offcpu.bpf.c -- -I.
