//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * gotiming.bpf.c - entry and return-site programs for Go functions.
 *
 * A uretprobe rewrites the return address on the stack, which Go's stack
 * growth and traceback cannot survive, so a Go function is timed with a
 * uprobe at entry and a uprobe on each of its RET instructions (found by
 * disassembly in the loader). Goroutines move between threads, so the entry
 * state is keyed by goroutine, not thread: the goroutine ID read from the g
 * in R14 (amd64 register ABI, Go 1.17+), combined with the distance from the
 * goroutine's stack top to SP. At the entry probe and at a RET, SP points at
 * the return address, so the distance is the same at both; a recursive call
 * sits deeper and gets its own key; when the runtime moves the stack it
 * copies the frames, so the distance survives a move.
 *
 * An exit probe sits on the RET, or on the POP RBP just before it: there the
 * frame pointer still holds the function's frame, so the stack recorded
 * with a crossing includes the immediate caller; SP is then 8 below its
 * value at the RET, and the cookie says so (GO_COOKIE_SP_SHIFT).
 *
 * The BPF cookie holds the target index (the tp_counters element) in its
 * low 32 bits; GO_COOKIE_CHECK marks an entry probe placed on the JBE of the
 * stack-bound check, which the kernel emulates (about 5 us a hit here)
 * where the comparison before it is single-stepped (about 19 us). That JBE
 * runs again after runtime.morestack grows the stack: the firing whose
 * jump will be taken (CF or ZF set, "below or equal") is skipped, so each
 * call counts once.
 *
 * Panics and runtime.Goexit leave a function without its RET. A later entry
 * of the same goroutine at the same depth finds that stale entry: it is
 * expired and counted as an orphan, and the new call starts clean.
 */
#include "timing.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Offsets in runtime.g, set by the loader from DWARF or the Go version. */
volatile const __u64 go_goid_off = 152;
volatile const __u64 go_stackhi_off = 8;

#define GO_COOKIE_CHECK (1ULL << 32)
#define GO_COOKIE_SP_SHIFT 40 /* bits 40-47: bytes to add to SP at this site */
#define GO_FLAG_CF 0x0001
#define GO_FLAG_ZF 0x0040

/* Per-CPU statistics of the Go programs: go_stats[0]. */
struct go_probe_stats {
	__u64 morestack; /* entry firings skipped: the stack check failed */
	__u64 expired;   /* stale entries expired (panic, Goexit) */
	__u64 no_g;      /* firings where the goroutine could not be read */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct go_probe_stats);
} go_stats SEC(".maps");

/* Puts struct go_probe_stats in BTF so bpf2go generates its Go type. */
const struct go_probe_stats *go_unused_stats __attribute__((unused));

static __always_inline struct go_probe_stats *go_stats_get(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&go_stats, &zero);
}

/* go_id returns the entry-state key of the current call: goroutine ID and
 * distance of SP (plus sp_adjust, to get SP as it is at the RET) from the
 * stack top, mixed with the process ID. */
static __always_inline int go_id(struct pt_regs *ctx, __u64 sp_adjust, __u64 *id)
{
	__u64 g = ctx->r14, goid = 0, hi = 0, dist, sp = ctx->sp + sp_adjust;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (g == 0 || bpf_probe_read_user(&goid, sizeof(goid), (void *)(g + go_goid_off)) ||
	    bpf_probe_read_user(&hi, sizeof(hi), (void *)(g + go_stackhi_off)) || hi < sp) {
		struct go_probe_stats *s = go_stats_get();
		if (s)
			s->no_g++;
		return -1;
	}
	dist = hi - sp; /* below 2^32: a goroutine stack is at most 1 GB */
	*id = ((goid + (__u64)tgid * 0x9E3779B97F4A7C15ULL) << 32) | (dist & 0xffffffffULL);
	return 0;
}

/* go_expire_counted returns how many of e's live entries were counted
 * (entered inside a window) and takes them off tp_inflight: entries pushed
 * outside a window may be left without their RET when the probes are
 * detached between windows, and are neither orphans nor in flight. */
static __always_inline __u64 go_expire_counted(struct tp_entry *e, __u32 target)
{
	__u64 n = 0;

	for (__u32 i = 0; i < TP_MAX_DEPTH; i++) {
		if (e->floor + i >= e->depth)
			break;
		if (e->tick[(e->floor + i) & (TP_MAX_DEPTH - 1)] == TP_TICK_UNCOUNTED)
			continue;
		n++;
		tp_inflight_add(target, -1);
	}
	return n;
}

/* go_enter is the entry program's body (go_entry here, go_entry_multi in
 * gomulti.bpf.c). */
static __always_inline int go_enter(struct pt_regs *ctx)
{
	__u64 cookie, id;
	__u32 target;

	if (!tp_pid_ok())
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
	target = (__u32)cookie;
	if ((cookie & GO_COOKIE_CHECK) && (ctx->flags & (GO_FLAG_CF | GO_FLAG_ZF))) {
		struct go_probe_stats *s = go_stats_get();
		if (s)
			s->morestack++;
		return 0;
	}
	if (go_id(ctx, 0, &id))
		return 0;

	/* A live entry under this key cannot belong to a running call: that
	 * call would be at this very depth of this goroutine. Its RET was
	 * skipped by a panic or Goexit: expire it. */
	struct tp_key key = { .id = id, .target = target };
	struct tp_entry *e = bpf_map_lookup_elem(&tp_entries, &key);
	if (e && e->depth > e->floor) {
		struct tp_counts *c = bpf_map_lookup_elem(&tp_counters, &target);
		struct go_probe_stats *s = go_stats_get();
		__u64 n = e->depth - e->floor;

		if (tp_windowed)
			n = go_expire_counted(e, target);
		if (c)
			c->orphans += n;
		if (s)
			s->expired += n;
		e->depth = 0;
		e->floor = 0;
	}
	return tp_enter(id, target);
}

/* go_ret is the exit program's body (go_exit here, go_exit_multi in
 * gomulti.bpf.c). */
static __always_inline int go_ret(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 target = (__u32)cookie;
	__u64 id;

	if (!tp_pid_ok())
		return 0;
	if (go_id(ctx, (cookie >> GO_COOKIE_SP_SHIFT) & 0xff, &id))
		return 0;
	tp_exit(ctx, id, target, BPF_F_USER_STACK);

	/* Keys are per goroutine and depth: most are used once. Delete an
	 * emptied entry, or the LRU map would fill with them and start
	 * evicting the entries of calls still in flight. */
	struct tp_key key = { .id = id, .target = target };
	struct tp_entry *e = bpf_map_lookup_elem(&tp_entries, &key);
	if (e && e->depth == 0)
		bpf_map_delete_elem(&tp_entries, &key);
	return 0;
}

/* go_echo_hit is the echo program's body (bpf/echo.h): the cookie holds
 * the target in its low 32 bits and the bytes the entry's instruction
 * moved sp down in bits 32-39, so that the key is the entry's. */
static __always_inline int go_echo_hit(struct pt_regs *ctx)
{
	__u64 t2 = bpf_ktime_get_ns(), cookie, id, rd;

	cookie = bpf_get_attach_cookie(ctx);
	rd = tp_run_delay();
	if (go_id(ctx, (cookie >> 32) & 0xff, &id))
		return 0;
	return tp_echo_keyed(id, (__u32)cookie, t2, rd);
}

/* GO_PROGS defines the entry, exit and echo programs, ENTRY, EXIT and
 * ECHO, of attach type SEC_NAME: "uprobe" here, "uprobe.multi" in
 * gomulti.bpf.c. */
#define GO_PROGS(SEC_NAME, ENTRY, EXIT, ECHO) \
	SEC(SEC_NAME)                         \
	int ENTRY(struct pt_regs *ctx)        \
	{                                     \
		return go_enter(ctx);         \
	}                                     \
	SEC(SEC_NAME)                         \
	int EXIT(struct pt_regs *ctx)         \
	{                                     \
		return go_ret(ctx);           \
	}                                     \
	SEC(SEC_NAME)                         \
	int ECHO(struct pt_regs *ctx)         \
	{                                     \
		return go_echo_hit(ctx);      \
	}

GO_PROGS("uprobe", go_entry, go_exit, go_echo)
