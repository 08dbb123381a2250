// SPDX-License-Identifier: Apache-2.0

package bpf

// The Go-function timing programs (gotiming.bpf.c): go_entry and go_exit,
// uprobes on a Go function's entry and on each of its RET instructions,
// keyed by goroutine. They include timing.h and share its maps with the
// user-function programs (loader.Session.LoadShared).
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall" -target amd64 -type go_probe_stats GoTiming gotiming.bpf.c -- -I.
