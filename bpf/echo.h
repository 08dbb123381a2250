/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * echo.h - the probe's own cost inside a timed call, measured where and
 * when the calls happen (docs/overhead.md).
 *
 * A uprobe pair adds to every call it times the part of its own path that
 * lies between the entry's clock reading and the exit's: the rest of the
 * entry handler and the return to user space (the entry side), the trap
 * into the return probe and the start of its handler (the exit side). On
 * this kind of machine it is 0.7 us for back-to-back calls and 3-9 us for
 * a call that follows a sleep of 1-10 ms (cold caches and TLB), so it is
 * measured in the run itself:
 *
 * In echo windows (tp_echo.phase == TP_ECHO_WINDOW, opened by the loader at
 * random times for a share of the run) a second uprobe, the echo, sits on
 * the instruction right after the entry probe's. Its program reads the
 * clock first: the gap G between the entry's reading and the echo's is the
 * entry side of this very call plus one trap into a uprobe handler, taken
 * right after another (warm). run_delay, the kernel's count of the time
 * the thread waited for a CPU (task->sched_info.run_delay), read at both,
 * splits G into the time on CPU (G_on) and the time preempted (P): a
 * preemption on the way back to user space lands in the window.
 * `tickprof calibrate` fits, per probe kind, the window's whole overhead
 * O = a + b G_on + P across call patterns (back to back, after sleeps,
 * after spins); the model of the target's kind (tp_echo_models) turns each
 * echoed call into one overhead value, summed and histogrammed here per
 * target, so that the mean's correction and the quantiles' come from the
 * run's own calls.
 *
 * Calls entering in an echo window carry the echo's cost and are not
 * timed; calls that overlap an attach or detach of the echo (tp_echo's
 * exclusion interval, or phase TP_ECHO_EXCLUDED) are not timed either:
 * patching the function's text stalls a call that runs into it for
 * milliseconds.
 */
#ifndef TICKPROF_ECHO_H
#define TICKPROF_ECHO_H

/* Load-time constant: tp_echo_on turns the machinery on (user functions,
 * ns and tick clocks, one process). */
volatile const __u32 tp_echo_on = 0;

#define TP_ECHO_NORMAL 0
#define TP_ECHO_EXCLUDED 1
#define TP_ECHO_WINDOW 2

/* Frame tag bits (tp_frame.flags, tp_tstack.frame; frames are 8-aligned):
 * TP_FRAME_UNCOUNTED is bit 0 (timing.h). */
#define TP_FRAME_ECHO 2ULL   /* entered in an echo window */
#define TP_FRAME_ECHOED 4ULL /* its echo fired */
#define TP_FRAME_TAGS 7ULL

/* Hash-keyed entries (tp_entries: Go functions) tag an echo-window call
 * in its tick, which then holds run_delay (far below these bits); bit 63
 * is TP_TICK_CHECKED, which the jiffies clock alone uses. */
#define TP_TICK_ECHO (1ULL << 62)
#define TP_TICK_ECHOED (1ULL << 61)
#define TP_TICK_ECHO_BITS (TP_TICK_ECHO | TP_TICK_ECHOED)

/* The echo state the loader writes: tp_echo[0]. */
struct tp_echo_state {
	__u32 phase;
	__u32 pad;
	__u64 excl_lo; /* the latest exclusion interval, monotonic ns */
	__u64 excl_hi; /* 0 while it is still open */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_echo_state);
} tp_echo SEC(".maps");

/* Per target, per CPU: what the echoes measured. */
struct tp_echo_counts {
	__u64 n;       /* echoed calls */
	__u64 g_sum;   /* sum of G_on (ns) */
	__u64 g_sq_lo; /* sum of G_on^2, 128 bits */
	__u64 g_sq_hi;
	__u64 p_sum;   /* sum of P (ns) */
	__u64 p_sq_lo; /* sum of P^2, 128 bits */
	__u64 p_sq_hi;
	__u64 gp_sum;  /* sum of G_on P */
	__u64 o_sum;   /* sum of the model's overhead a + b G_on + P */
	__u64 o_sq_lo; /* its squares, 128 bits */
	__u64 o_sq_hi;
	__u64 o_max;               /* the largest */
	__u64 missed;              /* echoes that found no entry of theirs */
	__u64 window;              /* calls entering in an echo window (not timed) */
	__u64 excluded;            /* calls overlapping an attach or detach (not timed) */
	__u64 hist[TP_QH_BUCKETS]; /* the overhead values, qhist layout */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* sized by the loader: the target count */
	__type(key, __u32);
	__type(value, struct tp_echo_counts);
} tp_echoes SEC(".maps");

/* Per target: the calibrated model O = a + b G_on + P of its probe kind,
 * a in ns and b in 1/1024 (the loader writes it; zero: O = G_on + P). */
struct tp_echo_model {
	__s64 a;
	__u64 b;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader: the target count */
	__type(key, __u32);
	__type(value, struct tp_echo_model);
} tp_echo_models SEC(".maps");

/* Kernel types read for run_delay (CO-RE: offsets fixed at load time). */
struct sched_info {
	unsigned long long run_delay;
} __attribute__((preserve_access_index));

struct task_struct {
	struct sched_info sched_info;
} __attribute__((preserve_access_index));

/* tp_run_delay is the current thread's total wait for a CPU (ns). */
static __always_inline __u64 tp_run_delay(void)
{
	return bpf_get_current_task_btf()->sched_info.run_delay;
}

static __always_inline struct tp_echo_state *tp_echo_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&tp_echo, &zero);
}

/* tp_echo_tag is the frame tag of a call entering now: TP_FRAME_ECHO in an
 * echo window, else 0. */
static __always_inline __u64 tp_echo_tag(void)
{
	struct tp_echo_state *e;

	if (!tp_echo_on)
		return 0;
	e = tp_echo_get();
	return e && e->phase == TP_ECHO_WINDOW ? TP_FRAME_ECHO : 0;
}

/* tp_echo_tick_tag turns a hash-keyed entry's tick into frame tags. */
static __always_inline __u64 tp_echo_tick_tag(__u64 tick)
{
	return ((tick & TP_TICK_ECHO) ? TP_FRAME_ECHO : 0) |
	       ((tick & TP_TICK_ECHOED) ? TP_FRAME_ECHOED : 0);
}

/* tp_echo_skip reports whether a call tagged tag, from entry ns ens to exit
 * ns ns, is left out of the timing: entered in an echo window, or
 * overlapping an attach or detach of the echo. It counts which. */
static __always_inline int tp_echo_skip(__u32 target, __u64 tag, __u64 ens, __u64 ns)
{
	struct tp_echo_counts *c;
	struct tp_echo_state *e;
	int window, excl;

	if (!tp_echo_on)
		return 0;
	window = (tag & (TP_FRAME_ECHO | TP_FRAME_ECHOED)) != 0;
	e = tp_echo_get();
	excl = !window && e &&
	       (e->phase == TP_ECHO_EXCLUDED ||
		(e->excl_lo != 0 && ens <= (e->excl_hi ? e->excl_hi : ns) && ns >= e->excl_lo));
	if (!window && !excl)
		return 0;
	c = bpf_map_lookup_elem(&tp_echoes, &target);
	if (c) {
		if (window)
			c->window++;
		else
			c->excluded++;
	}
	return 1;
}

/* tp_echo_account adds one echoed call of target: the gap g between its
 * entry's reading and the echo's, of which p was spent waiting for a CPU. */
static __always_inline void tp_echo_account(__u32 target, __u64 g, __u64 p)
{
	struct tp_echo_counts *c = bpf_map_lookup_elem(&tp_echoes, &target);
	struct tp_echo_model *m = bpf_map_lookup_elem(&tp_echo_models, &target);
	__u64 gon, o, b = 1024;
	__s64 so, a = 0;
	__u32 i;

	if (!c)
		return;
	if (m && m->b != 0) {
		a = m->a;
		b = m->b;
	}
	if (p > g)
		p = g;
	gon = g - p;
	so = a + (__s64)((gon * b) >> 10) + (__s64)p;
	o = so > 0 ? (__u64)so : 0;
	c->n++;
	c->g_sum += gon;
	tp_add_sq(&c->g_sq_lo, &c->g_sq_hi, gon);
	c->p_sum += p;
	tp_add_sq(&c->p_sq_lo, &c->p_sq_hi, p);
	c->gp_sum += gon * p;
	c->o_sum += o;
	tp_add_sq(&c->o_sq_lo, &c->o_sq_hi, o);
	if (o > c->o_max)
		c->o_max = o;
	i = tp_qh_index(o);
	asm volatile("" : "+r"(i));
	if (i < TP_QH_BUCKETS)
		c->hist[i]++;
}

/* tp_echo_missed counts an echo of target that found no entry. */
static __always_inline void tp_echo_missed(__u32 target)
{
	struct tp_echo_counts *c = bpf_map_lookup_elem(&tp_echoes, &target);

	if (c)
		c->missed++;
}

#endif /* TICKPROF_ECHO_H */
