// SPDX-License-Identifier: Apache-2.0

package bpf

// The sampling programs of `tickprof sample`: sample_cpu (perf_event),
// follow_fork and note_exec (sched tracepoints) and count_calls (uprobe).
// Generated: sample_x86_bpfel.go and .o.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 -type sample_hdr -type py_proc Sample sample.bpf.c -- -I.
