// SPDX-License-Identifier: Apache-2.0

package bpf

// The kernel-function programs of `tickprof time -k`: kprobe/kretprobe and
// fentry/fexit entry/exit programs sharing timing.h's counters.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Kfunc kfunc.bpf.c
