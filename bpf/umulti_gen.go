// SPDX-License-Identifier: Apache-2.0

package bpf

// The user-function programs as uprobe.multi programs (umulti.bpf.c), for
// kernels with multi-uprobe links (6.6+): attaching and detaching thousands
// of functions takes one system call each way instead of one per function.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 Umulti umulti.bpf.c -- -I.
