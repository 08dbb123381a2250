// SPDX-License-Identifier: Apache-2.0

package bpf

// The system-call programs of `tickprof time -s`: raw_syscalls and
// syscalls:sys_{enter,exit}_NAME entry/exit programs sharing timing.h's
// counters, with the thread's entry state in an array slot indexed by thread
// id (cheaper per side than task-local storage; colliding ids lose the
// call as an orphan, never mix times).
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Syscall syscall.bpf.c
