//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * stackid.bpf.c - the alternative stack design, measured against tickprof's
 * by bench/sample/samplebpf: sample_stackid interns the kernel and user
 * stacks in a stack-trace map and counts them in a hash, read at the end,
 * where sample_cpu (bpf/sample.bpf.c, included here unchanged) pushes one
 * record per sample to the ring buffer. Only the benchmark loads it: its
 * maps (a stack-trace map of 16384 stacks, a 65536-entry hash) are not
 * allocated by `tickprof sample`.
 */
#include "sample.bpf.c"

#define BPF_MAP_TYPE_STACK_TRACE 7

struct stack_key {
	__u32 pid;
	__s32 kern_id;
	__s32 user_id;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_DEPTH * 8);
} stackids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct stack_key);
	__type(value, __u64);
} stack_counts SEC(".maps");

SEC("perf_event")
int sample_stackid(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct stack_key k = {};
	__u64 one = 1, *v;

	if (!keep_sample(tgid))
		return 0;
	k.pid = tgid;
	k.kern_id = bpf_get_stackid(ctx, &stackids, 0);
	k.user_id = bpf_get_stackid(ctx, &stackids, BPF_F_USER_STACK);
	v = bpf_map_lookup_elem(&stack_counts, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&stack_counts, &k, &one, BPF_NOEXIST) < 0)
		bump(STAT_DROPPED);
	return 0;
}
