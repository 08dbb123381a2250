// SPDX-License-Identifier: Apache-2.0

package main

// The user-function timing programs taken apart piece by piece
// (cost.bpf.c, built against the product's timing.h in bpf/). Generated:
// cost_x86_bpfel.go and .o; `make generate` rebuilds them.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Cost cost.bpf.c -- -I../../bpf
