// SPDX-License-Identifier: Apache-2.0

// Package bpf holds tickprof's BPF C sources and the Go bindings bpf2go
// generates from them. Regenerate with `make generate` (needs clang and
// llvm-strip); the generated files are committed.
//
// timing.h is the shared timing core (per-target counters, entry state,
// crossing records); timing.bpf.c holds the user-function programs.
//
// bpf is a leaf: it imports nothing of the project, and of third-party
// modules only cilium/ebpf and x/sys (checked by internal/layers).
package bpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 -type tp_counts -type tp_stats -type tp_record -type tp_key -type tp_entry -type tp_echo_counts -type tp_echo_state -type tp_echo_model Timing timing.bpf.c
