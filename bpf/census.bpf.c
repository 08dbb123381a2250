//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * census.bpf.c - counts the system calls of one process by number
 * (raw_syscalls:sys_enter), for a short window: when a timed syscall gets
 * no calls, tickprof says which the process does make (glibc's nanosleep()
 * makes clock_nanosleep, its open() openat, ...). Not attached while
 * targets are being timed with calls: it would add its own cost to their
 * windows.
 */
#include "common.h"

#define CS_MAX_NR 1024

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

/* The process counted (tgid); 0 counts every process. */
volatile const __u32 cs_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CS_MAX_NR);
	__type(key, __u32);
	__type(value, __u64);
} cs_counts SEC(".maps");

SEC("raw_tracepoint/sys_enter")
int cs_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 nr = (__u32)ctx->args[1];
	__u64 *c;

	if (cs_tgid != 0 && (__u32)(bpf_get_current_pid_tgid() >> 32) != cs_tgid)
		return 0;
	if (nr >= CS_MAX_NR)
		return 0;
	c = bpf_map_lookup_elem(&cs_counts, &nr);
	if (c)
		(*c)++;
	return 0;
}
