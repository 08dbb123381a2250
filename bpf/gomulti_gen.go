// SPDX-License-Identifier: Apache-2.0

package bpf

// The Go-function programs with their uprobe.multi versions (gomulti.bpf.c),
// loaded instead of GoTiming on kernels with multi-uprobe links (6.6+).
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Gomulti gomulti.bpf.c -- -I.
