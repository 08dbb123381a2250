package bpf

// The system-call programs of `tickprof time -s`: raw_syscalls and
// syscalls:sys_{enter,exit}_NAME entry/exit programs sharing timing.h's
// counters, with the thread's entry state in task-local storage.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Syscall syscall.bpf.c
