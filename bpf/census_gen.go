// SPDX-License-Identifier: Apache-2.0

package bpf

// The syscall census: counts one process's system calls by number, for
// the hint tickprof gives when a timed syscall gets no calls.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Census census.bpf.c
