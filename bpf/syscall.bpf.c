//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * syscall.bpf.c - entry and exit programs for system calls (-s).
 *
 * Two ways in, the loader picks one (internal/loader/syscall.go says which and why):
 *
 *   sc_raw_enter / sc_raw_exit   raw tracepoints raw_syscalls:sys_enter and
 *                                sys_exit; the syscall number picks the
 *                                target through sc_targets (nr -> index+1).
 *   sc_tp_enter / sc_tp_exit     tracepoints syscalls:sys_enter_NAME and
 *                                sys_exit_NAME, attached once per syscall
 *                                with the target index as the BPF cookie.
 *
 * A thread is in at most one system call at a time, so its entry state is
 * one slot, in an array indexed by thread id modulo its size (a power of
 * two the loader picks from pid_max): an array lookup the verifier inlines,
 * where task-local storage costs a helper call of about 40 ns on each side
 * of every syscall here and a hash keyed by thread id more. The slot holds
 * the thread id, so two threads whose ids collide modulo the size never mix
 * their times: the call whose slot was taken is counted as an orphan.
 * (timing.h's tp_task_* stack would serve too, but a syscall cannot nest.)
 * The counters, records and clocks are timing.h's (tp_account), shared
 * with the other target kinds.
 */
#include "timing.h"

/* Larger than any x86-64 syscall number (the table ends near 470). */
#define SC_MAX_NR 1024

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

/* Entry state of a thread's system call in flight. */
struct sc_state {
	__u32 tid;
	__u32 target; /* target index + 1; 0 when no timed syscall is in flight */
	__u64 tick;
	__u64 ns;
	__u64 rd; /* run_delay at entry, under the check (tp_check_on) */
};

/* Slot mask: the size of sc_slots minus one (set by the loader). */
volatile const __u32 sc_slot_mask = 65535;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536); /* resized by the loader to sc_slot_mask + 1 */
	__type(key, __u32);
	__type(value, struct sc_state);
} sc_slots SEC(".maps");

/* Syscall number -> target index + 1 (raw tracepoint path); 0: not timed. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SC_MAX_NR);
	__type(key, __u32);
	__type(value, __u32);
} sc_targets SEC(".maps");

/* sc_pid_ok is tp_pid_ok returning the pid_tgid it read (*id). */
static __always_inline int sc_pid_ok(__u64 *id)
{
	struct tp_stats *s;

	*id = bpf_get_current_pid_tgid();
	if (tp_filter_tgid == 0 || (__u32)(*id >> 32) == tp_filter_tgid)
		return 1;
	s = tp_stats_get();
	if (s)
		s->filtered++;
	return 0;
}

/* sc_enter starts timing a call of target (index + 1 in target1) by
 * thread tid. */
static __always_inline int sc_enter(__u32 tid, __u32 target1)
{
	__u32 slot = tid & sc_slot_mask;
	struct sc_state *st;
	__u64 ns = 0;

	st = bpf_map_lookup_elem(&sc_slots, &slot);
	if (!st)
		return 0;
	if (st->target && !(tp_windowed && st->tick == TP_TICK_UNCOUNTED)) {
		/* This thread's previous timed call never reached its exit
		 * (or another thread's whose id collides is still in flight). */
		tp_orphan(st->target - 1);
		if (tp_windowed)
			tp_inflight_add(st->target - 1, -1);
	}
	if (tp_windowed && !tp_window_open()) {
		/* Entered outside a window: its exit pairs and is not counted. */
		st->tid = tid;
		st->tick = TP_TICK_UNCOUNTED;
		st->target = target1;
		return 0;
	}
	if (tp_windowed)
		tp_inflight_add(target1 - 1, 1);
	st->tid = tid;
	st->rd = tp_check_on() ? tp_run_delay() : 0;
	st->tick = tp_entry_readings(target1 - 1, &ns);
	st->ns = ns;
	st->target = target1;
	return 0;
}

/* sc_account_wait adds the time a call waited for a CPU inside it, w, to
 * c, and for a checked call (entry tick etick, exact ns from ens to ns) its
 * time on CPU. */
static __always_inline void sc_account_wait(struct tp_counts *c, __u64 w, __u64 etick, __u64 ens,
					    __u64 ns)
{
	__u64 cns, on;

	if (etick & TP_TICK_CHECKED) {
		cns = ns - ens;
		if (w > cns)
			w = cns;
		on = cns - w;
		c->chk_on_ns += on;
		tp_add_sq(&c->chk_on_sq_lo, &c->chk_on_sq_hi, on);
	}
	c->wait_ns += w;
	tp_add_sq(&c->wait_sq_lo, &c->wait_sq_hi, w);
}

/* sc_exit ends thread tid's call in flight; returns 0 when one was timed,
 * -1 when none was (an exit whose entry came before attach, or a syscall
 * that is not a target). */
static __always_inline int sc_exit(void *ctx, __u32 tid)
{
	__u32 slot = tid & sc_slot_mask, target;
	struct sc_state *st;
	struct tp_counts *c;
	__u64 ns = 0, tick, etick, w;

	/* The slot is an inlined array lookup: found first, it tells whether
	 * this is a checked call (tp_check_draw), whose exact clock is then
	 * read first like the tick, so that the check's ns window and the
	 * jiffies window end together. Then the clock, as close to the timed
	 * path as possible. */
	st = bpf_map_lookup_elem(&sc_slots, &slot);
	if (tp_need_ns() || (tp_check_on() && st && (st->tick & TP_TICK_CHECKED)))
		ns = bpf_ktime_get_ns();
	tick = tp_now_tick(ns);
	if (!st || !st->target || st->tid != tid)
		return -1;
	target = st->target - 1;
	st->target = 0;
	if (tp_windowed) {
		if (st->tick == TP_TICK_UNCOUNTED)
			return 0; /* entered outside a window */
		tp_inflight_add(target, -1);
	}
	c = bpf_map_lookup_elem(&tp_counters, &target);
	if (!c)
		return 0;
	etick = st->tick;
	if (tp_check_on()) {
		w = tp_run_delay() - st->rd;
		sc_account_wait(c, w, etick, st->ns, ns);
		if (w)
			etick |= TP_TICK_WAITED;
	}
	tp_close(ctx, c, target, tick, ns, etick, st->ns, BPF_F_USER_STACK);
	return 0;
}

SEC("raw_tracepoint/sys_enter")
int sc_raw_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 nr = (__u32)ctx->args[1], *t;
	__u64 id;

	if (!sc_pid_ok(&id))
		return 0;
	t = bpf_map_lookup_elem(&sc_targets, &nr);
	if (!t || !*t)
		return 0;
	return sc_enter((__u32)id, *t);
}

SEC("raw_tracepoint/sys_exit")
int sc_raw_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id;

	if (!sc_pid_ok(&id))
		return 0;
	/* Windowed runs attach mid-call every window: an exit without its
	 * entry is expected there, not an orphan. */
	if (sc_exit(ctx, (__u32)id) < 0 && !tp_windowed) {
		/* Rare: find out whether a target's entry was missed. */
		struct pt_regs *regs = (struct pt_regs *)ctx->args[0];
		long nr = -1;
		__u32 *t;

		bpf_probe_read_kernel(&nr, sizeof(nr), &regs->orig_ax);
		if (nr < 0 || nr >= SC_MAX_NR)
			return 0;
		__u32 key = (__u32)nr;
		t = bpf_map_lookup_elem(&sc_targets, &key);
		if (t && *t)
			tp_orphan(*t - 1);
	}
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int sc_tp_enter(void *ctx)
{
	__u64 id;

	if (!sc_pid_ok(&id))
		return 0;
	return sc_enter((__u32)id, (__u32)bpf_get_attach_cookie(ctx) + 1);
}

SEC("tracepoint/syscalls/sys_exit_getppid")
int sc_tp_exit(void *ctx)
{
	__u64 id;

	if (!sc_pid_ok(&id))
		return 0;
	if (sc_exit(ctx, (__u32)id) < 0 && !tp_windowed)
		tp_orphan((__u32)bpf_get_attach_cookie(ctx));
	return 0;
}

/* Empty programs: the raw-tracepoint floor for the benchmark. */
EMPTY_PROG("raw_tracepoint/sys_enter", sc_empty_enter)
EMPTY_PROG("raw_tracepoint/sys_exit", sc_empty_exit)
