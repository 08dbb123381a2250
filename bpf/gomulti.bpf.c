//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * gomulti.bpf.c - the Go-function programs of gotiming.bpf.c with, beside
 * them, uprobe.multi versions (Linux 6.6+): every entry site of a binary in
 * one multi-uprobe link and every RET site in another, each site's cookie
 * in the link's cookie array. Loaded instead of gotiming.bpf.c where the
 * kernel has multi-uprobe links.
 */
#include "gotiming.bpf.c"

GO_PROGS("uprobe.multi", go_entry_multi, go_exit_multi, go_echo_multi)
