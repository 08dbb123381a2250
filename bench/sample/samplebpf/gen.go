// SPDX-License-Identifier: Apache-2.0

package main

// stackid.bpf.c: bpf/sample.bpf.c's programs and the alternative stack
// design. Generated: stackid_x86_bpfel.go and .o; `make generate` rebuilds
// them.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Stackid stackid.bpf.c -- -I../../../bpf
