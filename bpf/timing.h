/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * timing.h - shared interval-timing core of tickprof's BPF programs.
 *
 * Every timing program (user functions, syscalls, kernel functions, Go
 * RET-site probes) includes this header and calls:
 *
 *   tp_pid_ok()                      in-kernel process filter (tgid)
 *   tp_task_enter(target)            at entry: push the clock reading(s) on
 *   tp_task_exit(ctx, target, flags) the thread's stack in task storage /
 *                                    pop, account (the fast path, threads)
 *   tp_enter(key, target)            the same with the stack in the
 *   tp_exit(ctx, key, target, flags) tp_entries hash, for any key
 *   tp_close(ctx, c, target, tick, ns, etick, ens, flags)
 *                                    account a call from its entry and
 *                                    exit readings; for programs keeping
 *                                    their own entry state
 *   tp_account(ctx, c, target, d, dns, rt, flags)
 *                                    add one call to the per-CPU counters
 *                                    and write its crossing record
 *
 * `key` identifies the thread of execution (pid_tgid for threads, a
 * goroutine address for Go); `target` is the index of the timed target,
 * the same index the loader uses for tp_counters. For u(ret)probes the
 * index is the BPF cookie (bpf_get_attach_cookie), so one entry and one
 * exit program serve all targets.
 *
 * Clock (docs/design.md, "The clocks"): tp_clock is a load-time constant, so
 * the verifier prunes the branches for the clocks not chosen.
 *   TP_CLOCK_JIFFIES  tick = bpf_jiffies64(), d = measured jiffy period
 *   TP_CLOCK_TICK     ns on a grid of tp_tick_ns shifted per call by a
 *                     random phase (see tp_phase: dithered)
 *   TP_CLOCK_NS       tick = bpf_ktime_get_ns(), d = 1 ns
 * tp_exact = 1 also reads ns at entry/exit (ns mode and --validate) and
 * fills the exact-ns sums and the log2 histogram.
 *
 * The statistics need n, sum c and sum c^2 (Beilner eq. 4b/6 and 10a/10b,
 * see estimate/); they live in tp_counters, so a full ring buffer loses only
 * per-caller detail, never the estimate.
 */
#ifndef TICKPROF_TIMING_H
#define TICKPROF_TIMING_H

#include "common.h"
#include "timing_math.h"
#include "qhist.h"
#include "ustack.h"
#include "echo.h"

#define TP_CLOCK_JIFFIES 0
#define TP_CLOCK_TICK 1
#define TP_CLOCK_NS 2

/* Nesting depth kept per (key, target); deeper recursion overwrites the
 * oldest entry and counts it as an orphan. Must be a power of two. */
#define TP_MAX_DEPTH 16
#define TP_HIST_BUCKETS 64

/* Load-time constants (.rodata), set by the loader before loading. */
volatile const __u32 tp_clock = TP_CLOCK_JIFFIES;
volatile const __u32 tp_exact = 0;
volatile const __u64 tp_tick_ns = 1;
volatile const __u32 tp_filter_tgid = 0; /* 0: every process */
volatile const __u32 tp_want_records = 1;
/* ns clock only: crossing records follow a grid of tp_record_ns (a call
 * gets a record when it spans a grid line, ticks = lines spanned), so the
 * ring traffic stays about ET/tp_record_ns records per call instead of
 * one per call; 0 or 1 means one record per call. */
volatile const __u64 tp_record_ns = 0;
/* Timing in windows (an overhead budget): the entry counts a call only
 * while tp_window[0] is set (by the loader at run time); calls entering
 * outside are pushed flagged (bit 0 of the frame; TP_TICK_UNCOUNTED as the
 * reading in tp_entries) so that their exits still pair, and are not
 * counted. tp_inflight holds the counted calls not yet returned, so that
 * the exit probe stays attached until they have (see estimate/window.go).
 * 0: every call counts. The flag is a map, not a global, so that every
 * object sharing the session's maps (multi-uprobe, Go, syscall programs)
 * sees the same window. */
volatile const __u32 tp_windowed = 0;
#define TP_FRAME_UNCOUNTED 1ULL
#define TP_TICK_UNCOUNTED (~0ULL)
/* Jiffies clock without tp_exact: nonzero turns on the clock check, one
 * call in tp_check[target] (a power of two, set by the loader from the
 * target's mean so that the check costs about 1% of it; at most
 * tp_check_every) drawn at random and also timed with the ns clock, so
 * that the loader can compare the jiffies estimate with the exact mean of
 * the same calls (see tp_check_draw). */
volatile const __u32 tp_check_every = 0;
/* The index + 1 of the session's user function when it times exactly one
 * (its u(ret)probe programs then need no bpf_get_attach_cookie, a helper
 * call of ~20 ns here, bench/bpfcost); 0: read the cookie. */
volatile const __u32 tp_one_target = 0;
/* ns clock: log2 of tp_record_ns when it is a power of two (the record
 * grid then costs two shifts instead of two 64-bit divisions); 0: divide. */
volatile const __u32 tp_record_shift = 0;

/* Per-target, per-CPU counters: value of tp_counters[target].
 * The *_sq sums are 128-bit (hi:lo) so that a day of one-second calls in
 * ns (86400 * 1e18 = 8.6e22 > 2^64) cannot overflow; every other field
 * stays below 2^64 for far longer than that. */
struct tp_counts {
	__u64 calls;                 /* completed entry/exit pairs */
	__u64 ticks;                 /* sum c_i: tick crossings (0 when
				      * tp_ticks_are_ns: ns_sum is the sum, ns_sq the
				      * squares) */
	__u64 ticks_sq_lo;           /* sum c_i^2, low 64 bits */
	__u64 ticks_sq_hi;           /* sum c_i^2, high 64 bits */
	__u64 orphans;               /* entries or exits without their partner */
	__u64 crossings;             /* calls that got a record attempt (c_i > 0; ns
				      * clock: spanned a tp_record_ns grid line) */
	__u64 ns_sum;                /* exact mode: sum of ns */
	__u64 ns_sq_lo;              /* exact mode: sum of ns^2, low 64 bits */
	__u64 ns_sq_hi;              /* exact mode: sum of ns^2, high 64 bits */
	__u64 ns_min;                /* exact mode: 0 = unset; else min ns + 1 */
	__u64 ns_max;                /* exact mode: max ns */
	__u64 hist[TP_HIST_BUCKETS]; /* exact mode: bucket b counts ns with
				      * floor(log2(ns)) == b (ns = 0 -> 0) */
	/* Checked calls (tp_check_every): their count, sum c, sum c^2 and
	 * exact ns total. 64 bits: c^2 sums overflow only after 2^64 / HZ^2
	 * squared seconds, the ns total after 584 years of checked calls. */
	__u64 chk_calls;
	__u64 chk_ticks;
	__u64 chk_ticks_sq;
	__u64 chk_ns;
	__u64 chk_ns_sq_lo; /* their exact ns squared, 128 bits */
	__u64 chk_ns_sq_hi;
	/* Syscalls under the check: the time every call waited for a CPU
	 * inside it (run_delay, exact for all calls) and its squares, and
	 * the checked calls' time on CPU (their ns less that wait) and its
	 * squares: the mean is the on-CPU sample's mean plus the exact mean
	 * wait, so that a preemption (milliseconds, rare) is not a heavy
	 * tail the sample may miss (docs/statistics.md). */
	__u64 wait_ns;
	__u64 wait_sq_lo;
	__u64 wait_sq_hi;
	__u64 chk_on_ns;
	__u64 chk_on_sq_lo;
	__u64 chk_on_sq_hi;
	/* Calls longer than a tick (tp_check_on, tp_close): those that
	 * crossed two or more ticks without waiting for a CPU (system calls:
	 * run_delay did not move). All of them: their count and sum of c;
	 * the checked ones: their count, exact ns sum and its 128-bit
	 * squares. Their ticks bound their time, d c to within d each, so a
	 * stall of milliseconds the sample misses (interrupts, or a
	 * hypervisor that took the CPU: run_delay does not see them) is
	 * still counted (loader: assistedMean, estimate.AssistedMean). */
	__u64 long_calls;
	__u64 long_ticks;
	__u64 chk_long_calls;
	__u64 chk_long_ns;
	__u64 chk_long_sq_lo;
	__u64 chk_long_sq_hi;
};

/* Per-CPU run statistics: value of tp_runstats[0]. */
struct tp_stats {
	__u64 ring_drops;  /* bpf_ringbuf_reserve failures */
	__u64 stack_fails; /* bpf_get_stackid failures (record still sent) */
	__u64 filtered;    /* events from other processes (tgid filter) */
	__u64 overwritten; /* entries overwritten by recursion deeper than
			    * TP_MAX_DEPTH (orphans) */
	__u64 no_entry;    /* exits that found no entry (orphans): in flight
			    * at attach, or evicted from tp_entries */
};

/* Entry-state key: one stack per (thread-or-goroutine, target). */
struct tp_key {
	__u64 id;
	__u32 target;
	__u32 pad;
};

/* Entry state: a ring of TP_MAX_DEPTH clock readings. `depth` counts
 * pushes minus pops; `floor` is the depth below which readings were
 * overwritten (lost to recursion deeper than TP_MAX_DEPTH). */
struct tp_entry {
	__u32 depth;
	__u32 floor;
	__u64 tick[TP_MAX_DEPTH];
	__u64 ns[TP_MAX_DEPTH];
};

/* Ring-buffer record: one per call that crossed at least one tick. */
struct tp_record {
	__u32 target;
	__u32 pid; /* tgid */
	__u32 tid;
	__s32 stack_id; /* tp_stacks id of the caller's stack, < 0 if none */
	__u64 ticks;    /* c_i (ns clock: tp_record_ns grid lines spanned) */
	__u64 ns;       /* exact ns when tp_exact, else 0 */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 256); /* resized by the loader to the target count */
	__type(key, __u32);
	__type(value, struct tp_counts);
} tp_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_stats);
} tp_runstats SEC(".maps");

/* Per target: check one call in this many (tp_check_draw); 0: none. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256); /* resized by the loader to the target count */
	__type(key, __u32);
	__type(value, __u32);
} tp_check SEC(".maps");

/* Bounded: an entry whose exit never comes (thread killed, longjmp) is
 * evicted by LRU instead of leaking; the loader counts live entries left
 * at the end as orphans. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tp_key);
	__type(value, struct tp_entry);
} tp_entries SEC(".maps");

/* Zero value used to create tp_entries elements (too big for the stack
 * budget next to the rest). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_entry);
} tp_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} tp_records SEC(".maps");

/* Windowed runs: counted calls entered and not yet returned, per target
 * (per CPU: an exit may run on another CPU than its entry; the sum over
 * CPUs is the count). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 256); /* resized by the loader to the target count */
	__type(key, __u32);
	__type(value, __s64);
} tp_inflight SEC(".maps");

static __always_inline void tp_inflight_add(__u32 target, __s64 d)
{
	__s64 *v = bpf_map_lookup_elem(&tp_inflight, &target);

	if (v)
		*v += d;
}

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tp_window SEC(".maps");

/* tp_window_open says whether the window is open (windowed runs). */
static __always_inline int tp_window_open(void)
{
	__u32 zero = 0, *v = bpf_map_lookup_elem(&tp_window, &zero);

	return v && *v;
}

/* Caller stacks of crossing records: TP_STACK_DEPTH frames are plenty to
 * attribute time to callers, and keep the preallocated map at 2 MiB. These
 * are the kernel's frame-pointer walks: the fallback where the user stack
 * is not copied (tp_stack_bytes = 0, or programs other than the user
 * functions'). */
#define TP_STACK_DEPTH 32
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TP_STACK_DEPTH * sizeof(__u64));
} tp_stacks SEC(".maps");

/*
 * Crossing records of user functions carry the caller's user registers and
 * a copy of its stack instead of a frame-pointer walk, so that user space
 * unwinds them with call frame information (package unwind): code built
 * without frame pointers keeps its callers. A uretprobe passes
 * TP_STACK_COPY in stack_flags (its ctx is then the user pt_regs: ip is the
 * return address in the caller, sp just above it, bp the caller's); the
 * copy is up to tp_stack_bytes from sp (0: off), built in a per-CPU scratch
 * value and written with bpf_ringbuf_output at its own length. Only
 * crossing records pay for it.
 */
#define TP_STACK_COPY (1ULL << 32)
#define TP_MAX_STACK 28672 /* a per-CPU map value holds at most 32 KiB */
volatile const __u32 tp_stack_bytes = 0;

/* A crossing record with registers and a stack copy: stack_len bytes of
 * data follow the header. */
struct tp_urecord {
	struct tp_record r; /* stack_id -1 */
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u32 stack_len;
	__u32 pad;
	__u8 data[TP_MAX_STACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_urecord);
} tp_ustack SEC(".maps");

static __always_inline struct tp_stats *tp_stats_get(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&tp_runstats, &zero);
}

/* tp_stat_overwritten counts an entry overwritten by deep recursion. */
static __always_inline void tp_stat_overwritten(void)
{
	struct tp_stats *s = tp_stats_get();

	if (s)
		s->overwritten++;
}

/* tp_stat_no_entry counts an exit that found no entry. */
static __always_inline void tp_stat_no_entry(void)
{
	struct tp_stats *s = tp_stats_get();

	if (s)
		s->no_entry++;
}

/* tp_other_process reports whether the current task is outside the
 * filtered process: a child forked inside a timed function returns
 * through the parent's uretprobe (its return instances are copied at
 * fork) without an entry of its own. Checked only on the orphan paths. */
static __always_inline int tp_other_process(void)
{
	return tp_filter_tgid != 0 && (__u32)(bpf_get_current_pid_tgid() >> 32) != tp_filter_tgid;
}

/* tp_pid_ok reports whether the current task belongs to the filtered
 * process (always true when tp_filter_tgid is 0). */
static __always_inline int tp_pid_ok(void)
{
	struct tp_stats *s;

	if (tp_filter_tgid == 0)
		return 1;
	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == tp_filter_tgid)
		return 1;
	s = tp_stats_get();
	if (s)
		s->filtered++;
	return 0;
}

/* tp_now_tick reads the selected tick clock. For TP_CLOCK_TICK it is the
 * ns reading itself: tp_close quantizes the call (see tp_phase). */
static __always_inline __u64 tp_now_tick(__u64 ns)
{
	if (tp_clock == TP_CLOCK_JIFFIES)
		return bpf_jiffies64();
	return ns;
}

/*
 * tp_phase draws the dither of one call on the tick:DUR clock: a uniform
 * random r in {0, ..., d-1} ns (d = tp_tick_ns); 0 on the other clocks.
 * The entry stores e - r and tp_close counts c = floor((x - e + r) / d),
 * for entry ns e and exit ns x: the ticks of a grid of period d whose
 * last line before the entry lies r before it, a grid drawn anew for
 * every call.
 *
 * Why: the estimator's one assumption is Beilner's asynchronism (section
 * 2, eq. 4a/4b): the begin deviation B' (entry minus the last tick before
 * it) is uniform on (0, d) whatever the call does. A fixed grid breaks it
 * when the program keeps time with the clock (threads woken by the
 * scheduler tick, loops sleeping to timer boundaries, a probe whose extra
 * work on crossing calls shifts the next call). Here B' = r by
 * construction. Proof: let D = x - e = k d + f (integers, 0 <= f < d).
 * Then c = k + [r >= d - f], so E[c | D] = k + f/d = D/d exactly, because
 * r is drawn from a generator the program cannot observe, after everything
 * that decides D is fixed except the call's own code, which does not see
 * r either; D may depend on every earlier call and earlier r (a probe's
 * extra work on a crossing call runs after its exit reading and delays
 * the next call), but not on this r. So E[d c_i - D_i | past] = 0: the
 * errors d c_i - D_i form a martingale difference sequence, the mean
 * d sum c / n is unbiased for the mean of the D_i, and the errors of
 * different calls are uncorrelated whatever the calls' own correlation.
 *
 * Variance: per call c is floor(D/d) or ceil(D/d) (two values, the
 * two-point model, Beilner 8 and 10a/10b: Var(c | D) = p(1-p) with
 * p = frac(D/d)), so the per-call and batch-means intervals of estimate/
 * hold as they are. What dithering gives up is the telescoping of back-to-
 * back calls on one grid (Beilner 10c/10d: a tight loop's total is exact
 * to within one tick): with a grid per call every call keeps its own
 * quantization error, so a contiguous series has Var(c) = p(1-p) per call,
 * not d^2/6 for the whole run.
 *
 * Two 32-bit draws make a 64-bit one: with a single u32, r mod d is off
 * uniform by up to 1/2^32 per value, a bias up to d^2/2^32 ns in the mean
 * (3.7 us at d = 4 ms); with 64 bits it is below d^2/2^64 (under 1e-6 ns).
 */
static __always_inline __u64 tp_phase(void)
{
	__u64 r;

	if (tp_clock != TP_CLOCK_TICK)
		return 0;
	r = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32();
	return r % tp_tick_ns;
}

/* tp_need_ns reports whether the ns clock is read on every call. */
static __always_inline int tp_need_ns(void)
{
	return tp_clock != TP_CLOCK_JIFFIES || tp_exact;
}

/* tp_check_on reports whether a random share of calls is checked. */
static __always_inline int tp_check_on(void)
{
	return tp_clock == TP_CLOCK_JIFFIES && tp_check_every != 0;
}

/* The entry's tick of a checked call carries this bit: the check's draw is
 * kept apart from the ns reading, which exact mode (--validate) takes on
 * every call. A jiffies count never reaches it. */
#define TP_TICK_CHECKED (1ULL << 63)
/* A system call's entry tick carries this bit at its exit when it waited
 * for a CPU (run_delay moved): its ticks may then be its wait's, not its
 * time on CPU's, and it is not counted as longer than a tick (tp_close). */
#define TP_TICK_WAITED (1ULL << 60) /* below echo.h's bits */
#define TP_TICK_FLAGS (TP_TICK_CHECKED | TP_TICK_WAITED)

/* Per-CPU state of tp_rand64's generator. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tp_rng SEC(".maps");

/*
 * tp_rand64 returns 64 random bits from a per-CPU xorshift64* generator
 * (Marsaglia's xorshift with Vigna's multiplier), seeded from
 * bpf_get_prandom_u32 on each CPU's first use. It costs an inlined map
 * lookup and a few arithmetic instructions where bpf_get_prandom_u32 is a
 * helper call (~20 ns a call here, bench/bpfcost): what matters for the
 * draws is that the timed program cannot observe or influence the
 * generator, which holds for both. Two programs interleaved on one CPU may
 * draw the same value; that is no correlation with anything the calls do.
 */
static __always_inline __u64 tp_rand64(void)
{
	__u32 zero = 0;
	__u64 *st = bpf_map_lookup_elem(&tp_rng, &zero), x;

	if (!st)
		return (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32();
	x = *st;
	if (x == 0)
		x = (__u64)bpf_get_prandom_u32() << 32 | bpf_get_prandom_u32() | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*st = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/*
 * tp_check_draw decides at a call's entry whether it is checked, and so
 * whether the entry reads the ns clock: 1 in tp_check[target] calls, drawn
 * independently of everything the program does (tp_rand64's top bits).
 * The jiffies tick cannot be
 * dithered (tp_phase), so the asynchrony the estimate rests on can fail
 * there (threads woken by the tick, loops sleeping to it); on the checked
 * calls the jiffies crossings and the exact ns are both known, and since
 * the draw is independent of the calls, they are a random sample whose
 * jiffies estimate must agree with their exact mean when the clock is
 * asynchronous with the program. Two array lookups (inlined) per call;
 * two ns reads per checked call.
 *
 * The check's ns window ends a little later than the jiffies one: the
 * exit reads jiffies first and ns only after finding the entry (a few
 * tens of ns at most, next to a check whose resolution is the jiffy
 * divided by the square root of the checked crossings).
 */
static __always_inline int tp_check_draw(__u32 target)
{
	__u32 *every;

	if (!tp_check_on())
		return 0;
	every = bpf_map_lookup_elem(&tp_check, &target);
	if (!every || *every == 0)
		return 0;
	/* r < 2^32 / every: the top bits of the generator's output, its best
	 * (the low bits of xorshift64* are its weakest). */
	return (__u64)(__u32)(tp_rand64() >> 32) * *every < (1ULL << 32);
}

/* tp_entry_readings reads the entry clock(s) of a call of target: the tick
 * (dithered, tp_phase) and the ns (0 unless tp_exact or a checked call). */
static __always_inline __u64 tp_entry_readings(__u32 target, __u64 *ns)
{
	__u64 ph = tp_phase(), chk = 0;

	*ns = 0;
	if (tp_check_draw(target))
		chk = TP_TICK_CHECKED;
	/* Read the clock last, as close to the timed code as possible. */
	if (tp_need_ns() || chk)
		*ns = bpf_ktime_get_ns();
	return (tp_now_tick(*ns) - ph) | chk;
}

/* tp_enter pushes the clock reading(s) for (id, target). */
static __always_inline int tp_enter(__u64 id, __u32 target)
{
	struct tp_key key = { .id = id, .target = target };
	struct tp_entry *e;
	__u64 ns = 0, tick;
	__u32 slot;

	e = bpf_map_lookup_elem(&tp_entries, &key);
	if (!e) {
		__u32 zero = 0;
		struct tp_entry *z = bpf_map_lookup_elem(&tp_zero, &zero);

		if (!z)
			return 0;
		bpf_map_update_elem(&tp_entries, &key, z, BPF_NOEXIST);
		e = bpf_map_lookup_elem(&tp_entries, &key);
		if (!e)
			return 0;
	}
	slot = e->depth & (TP_MAX_DEPTH - 1);
	if (e->depth - e->floor >= TP_MAX_DEPTH) {
		/* The oldest reading (in slot) is overwritten: its exit will
		 * not count. */
		e->floor++;
		if (!tp_windowed || e->tick[slot] != TP_TICK_UNCOUNTED) {
			struct tp_counts *c = bpf_map_lookup_elem(&tp_counters, &target);

			if (c)
				c->orphans++;
			tp_stat_overwritten();
			if (tp_windowed)
				tp_inflight_add(target, -1);
		}
	}
	if (tp_windowed && !tp_window_open()) {
		e->tick[slot] = TP_TICK_UNCOUNTED; /* entered outside a window */
		e->depth++;
		return 0;
	}
	if (tp_windowed)
		tp_inflight_add(target, 1);
	if (tp_echo_tag()) {
		/* An echo-window call is not timed: its tick holds run_delay. */
		e->tick[slot] = tp_run_delay() | TP_TICK_ECHO;
		e->ns[slot] = bpf_ktime_get_ns();
		e->depth++;
		return 0;
	}
	tick = tp_entry_readings(target, &ns);
	e->tick[slot] = tick;
	if (tp_exact || tp_check_on())
		e->ns[slot] = ns; /* check: 0 for an unchecked call */
	e->depth++;
	return 0;
}

/* tp_records_woken is set by the run's first crossing record, which wakes
 * the reader (the others are written without a wakeup and read on its
 * polls): a command the session started has mapped its libraries by its
 * first timed call, and the reader rereads its maps from that record at
 * once, while the process surely lives; read at the next poll, a short
 * command under load had exited, and every caller stack ended at main. */
__u32 tp_records_woken = 0;

/* tp_record_wake is the wakeup flag of a crossing record (above). */
static __always_inline __u64 tp_record_wake(void)
{
	if (tp_records_woken)
		return BPF_RB_NO_WAKEUP;
	tp_records_woken = 1;
	return BPF_RB_FORCE_WAKEUP;
}

/* tp_urecord_out writes the crossing record of a uretprobe (ctx) with its
 * user registers and stack copy; it returns nonzero when there is no copy
 * (the caller then writes a record with a frame-pointer stack). */
static __always_inline int tp_urecord_out(struct pt_regs *ctx, __u32 target, __u64 rt, __u64 dns)
{
	__u32 zero = 0;
	struct tp_urecord *u = bpf_map_lookup_elem(&tp_ustack, &zero);
	__u64 pid_tgid = bpf_get_current_pid_tgid(), size;

	if (!u)
		return -1;
	u->ip = ctx->ip;
	u->sp = ctx->sp;
	u->bp = ctx->bp;
	u->stack_len = ustack_copy(u->data, TP_MAX_STACK, TP_MAX_STACK, 0, u->sp, tp_stack_bytes,
				   ustack_end(u->sp, TP_MAX_STACK));
	if (u->stack_len == 0 || u->stack_len > TP_MAX_STACK)
		return -1;
	u->r.target = target;
	u->r.pid = pid_tgid >> 32;
	u->r.tid = (__u32)pid_tgid;
	u->r.stack_id = -1;
	u->r.ticks = rt;
	u->r.ns = dns;
	u->pad = 0;
	size = sizeof(*u) - TP_MAX_STACK + u->stack_len;
	if (size > sizeof(*u))
		size = sizeof(*u);
	if (bpf_ringbuf_output(&tp_records, u, size, tp_record_wake()) < 0) {
		struct tp_stats *s = tp_stats_get();
		if (s)
			s->ring_drops++;
	}
	return 0;
}

/* tp_ticks_are_ns reports whether a call's ticks are its exact ns (the ns
 * clock: tick and ns are the same reading, so d == dns): tp_account then
 * keeps only the ns sums, and Go reads them as the tick sums too
 * (loader: Counters.ticksFromNs), which saves a second 128-bit square and
 * its sums on every call. */
static __always_inline int tp_ticks_are_ns(void)
{
	return tp_clock == TP_CLOCK_NS && tp_exact;
}

/* tp_account_ns adds a call of dns exact ns to c (target's counters): the
 * sum, the 128-bit sum of squares, min, max, the log2 histogram and, when
 * quantiles, the quantile histogram (qhist.h; refined when refine).
 * bench/qhist measures it in a loop. */
static __always_inline void tp_account_ns(struct tp_counts *c, __u32 target, __u64 dns,
					  __u32 quantiles, __u32 refine)
{
	__u32 k = tp_log2(dns), b = k;

	c->ns_sum += dns;
	tp_add_sq(&c->ns_sq_lo, &c->ns_sq_hi, dns);
	if (c->ns_min == 0 || dns + 1 < c->ns_min)
		c->ns_min = dns + 1;
	if (dns > c->ns_max)
		c->ns_max = dns;
	/* Keep the bound visible to older verifiers (6.1): clang drops
	 * a mask it proves redundant. */
	asm volatile("%0 &= 63" : "+r"(b));
	c->hist[b]++;
	if (quantiles)
		tp_qh_add_to(target, dns, k, refine);
}

/* tp_account adds one call to tp_counters[target]: d ticks, dns exact ns
 * (exact mode), and, when rt > 0 (rt = d except on the ns clock, see
 * tp_record_ns), writes a tp_record of rt with the stack from
 * bpf_get_stackid(ctx, stack_flags) (BPF_F_USER_STACK for the caller's
 * user stack), or, with TP_STACK_COPY, a tp_urecord (tp_urecord_out).
 * Every timing program ends a call through it. */
static __always_inline void tp_account(void *ctx, struct tp_counts *c, __u32 target, __u64 d,
				       __u64 dns, __u64 rt, __u64 stack_flags)
{
	c->calls++;
	if (!tp_ticks_are_ns()) {
		c->ticks += d;
		tp_add_sq(&c->ticks_sq_lo, &c->ticks_sq_hi, d);
	}
	if (tp_exact)
		tp_account_ns(c, target, dns, tp_quantiles, tp_qrefine);
	if (rt == 0 || !tp_want_records)
		return;
	c->crossings++;
	if ((stack_flags & TP_STACK_COPY) && tp_stack_bytes != 0 &&
	    tp_urecord_out(ctx, target, rt, dns) == 0)
		return;

	struct tp_record *r = bpf_ringbuf_reserve(&tp_records, sizeof(*r), 0);
	if (!r) {
		struct tp_stats *s = tp_stats_get();
		if (s)
			s->ring_drops++;
		return;
	}
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	r->target = target;
	r->pid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->ticks = rt;
	r->ns = dns;
	r->stack_id = bpf_get_stackid(ctx, &tp_stacks, stack_flags & ~TP_STACK_COPY);
	if (r->stack_id < 0) {
		struct tp_stats *s = tp_stats_get();
		if (s)
			s->stack_fails++;
	}
	bpf_ringbuf_submit(r, tp_record_wake());
}

/* tp_record_ticks is the rt of tp_account for a call from entry ns e to
 * exit ns x that crossed d ticks. */
static __always_inline __u64 tp_record_ticks(__u64 d, __u64 e, __u64 x)
{
	if (tp_clock == TP_CLOCK_NS && tp_record_shift != 0)
		return (x >> (tp_record_shift & 63)) - (e >> (tp_record_shift & 63));
	if (tp_clock == TP_CLOCK_NS && tp_record_ns > 1)
		return x / tp_record_ns - e / tp_record_ns;
	return d;
}

/* tp_close_checked accounts a checked call (tp_check_draw) that crossed
 * d ticks in cns exact ns; long: longer than a tick (tp_counts). */
static __always_inline void tp_close_checked(struct tp_counts *c, __u64 d, __u64 cns, int long_call)
{
	c->chk_calls++;
	c->chk_ticks += d;
	c->chk_ticks_sq += d * d;
	c->chk_ns += cns;
	tp_add_sq(&c->chk_ns_sq_lo, &c->chk_ns_sq_hi, cns);
	if (long_call) {
		c->chk_long_calls++;
		c->chk_long_ns += cns;
		tp_add_sq(&c->chk_long_sq_lo, &c->chk_long_sq_hi, cns);
	}
}

/* tp_close accounts a call whose entry read etick (and ens, exact mode)
 * and whose exit read tick and ns: every exit path ends here. */
static __always_inline void tp_close(void *ctx, struct tp_counts *c, __u32 target, __u64 tick,
				     __u64 ns, __u64 etick, __u64 ens, __u64 stack_flags)
{
	__u64 d, dns = 0, rt;
	int long_call;

	d = tick - (etick & ~TP_TICK_FLAGS);
	/* Longer than a tick (tp_counts): crossed two or more, no wait. */
	long_call = tp_check_on() && d >= 2 && !(etick & TP_TICK_WAITED);
	if (long_call) {
		c->long_calls++;
		c->long_ticks += d;
	}
	if (tp_check_on() && (etick & TP_TICK_CHECKED))
		tp_close_checked(c, d, (ns ? ns : bpf_ktime_get_ns()) - ens, long_call);
	if (tp_clock == TP_CLOCK_TICK)
		d /= tp_tick_ns; /* etick holds the dither (tp_phase) */
	rt = d;
	if (tp_exact) {
		dns = ns - ens;
		rt = tp_record_ticks(d, ens, ns);
	}
	tp_account(ctx, c, target, d, dns, rt, stack_flags);
}

/* tp_orphan counts an entry or exit of target without its partner. */
static __always_inline void tp_orphan(__u32 target)
{
	struct tp_counts *c = bpf_map_lookup_elem(&tp_counters, &target);

	if (c)
		c->orphans++;
}

/* tp_exit pops the reading for (id, target) and accounts the call
 * (tp_account). */
static __always_inline int tp_exit(void *ctx, __u64 id, __u32 target, __u64 stack_flags)
{
	struct tp_key key = { .id = id, .target = target };
	struct tp_counts *c;
	struct tp_entry *e;
	__u64 ns = 0, tick;
	__u32 slot;

	/* Read the clock first, as close to the timed code as possible. */
	if (tp_need_ns())
		ns = bpf_ktime_get_ns();
	tick = tp_now_tick(ns);

	c = bpf_map_lookup_elem(&tp_counters, &target);
	if (!c)
		return 0;
	e = bpf_map_lookup_elem(&tp_entries, &key);
	if (!e || e->depth == 0) {
		/* Exit without entry (attached mid-call, evicted); windowed
		 * runs attach mid-call every window. */
		if (!tp_windowed)
			c->orphans++;
		tp_stat_no_entry();
		return 0;
	}
	e->depth--;
	if (e->depth < e->floor) {
		/* Its reading was overwritten (already counted at entry). */
		e->floor = e->depth;
		return 0;
	}
	slot = e->depth & (TP_MAX_DEPTH - 1);
	if (tp_windowed) {
		if (e->tick[slot] == TP_TICK_UNCOUNTED)
			return 0; /* entered outside a window */
		tp_inflight_add(target, -1);
	}
	if (tp_echo_skip(target, tp_echo_tick_tag(e->tick[slot]), e->ns[slot], ns))
		return 0;
	tp_close(ctx, c, target, tick, ns, e->tick[slot], e->ns[slot], stack_flags);
	return 0;
}

/*
 * Thread entry state in task-local storage: the fast path for threads
 * (user functions). One stack per thread holds the entries of every
 * target, tagged with the target: calls nest, so exits come in the reverse
 * order of entries. It costs one task-storage access instead of a hash
 * lookup, and it is freed with the thread, so nothing leaks when an exit
 * never comes.
 */
struct tp_tstack {
	__u32 depth; /* pushes - pops */
	__u32 floor; /* depth below which entries were overwritten */
	__u32 target[TP_MAX_DEPTH];
	__u64 tick[TP_MAX_DEPTH];
	__u64 ns[TP_MAX_DEPTH];
	__u64 frame[TP_MAX_DEPTH]; /* uprobes: sp at entry; 0: unknown */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_tstack);
} tp_tasks SEC(".maps");

/* tp_task_push pushes an entry of target, tagged with frame, with the
 * given readings on the thread's stack st, overwriting the oldest entry
 * when the stack is full. Returns the slot, so that the caller may fill
 * the readings last (tp_task_enter_frame). */
static __always_inline __u32 tp_task_push(struct tp_tstack *st, __u32 target, __u64 frame,
					  __u64 tick, __u64 ns)
{
	__u32 slot = st->depth & (TP_MAX_DEPTH - 1);

	if (st->depth - st->floor >= TP_MAX_DEPTH) {
		/* Overwrite the oldest entry: its exit will not count. */
		st->floor++;
		if (!(st->frame[slot] & TP_FRAME_UNCOUNTED)) {
			tp_orphan(st->target[slot]);
			tp_stat_overwritten();
			if (tp_windowed)
				tp_inflight_add(st->target[slot], -1);
		}
	}
	st->target[slot] = target;
	st->frame[slot] = frame;
	st->tick[slot] = tick;
	st->ns[slot] = ns;
	st->depth++;
	return slot;
}

/* tp_window_flag is, for a call of target entering now, TP_FRAME_UNCOUNTED
 * when it enters outside a window (it is pushed, not counted), else 0
 * after counting it in flight. */
static __always_inline __u64 tp_window_flag(__u32 target)
{
	if (!tp_windowed)
		return 0;
	if (tp_window_open()) {
		tp_inflight_add(target, 1);
		return 0;
	}
	return TP_FRAME_UNCOUNTED;
}

/* tp_task_enter_frame pushes the clock reading(s) of target on the current
 * thread's stack, tagged with frame (for a uprobe, sp at the probe: the
 * address of the return address; 0 when unknown, see tp_task_uexit). */
static __always_inline int tp_task_enter_frame(__u32 target, __u64 frame)
{
	struct tp_tstack *st;
	__u64 ns, tick;
	__u32 slot;

	__u64 tag = tp_echo_tag();

	st = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return 0;
	slot = tp_task_push(st, target, frame | tp_window_flag(target) | tag, 0, 0);
	slot &= TP_MAX_DEPTH - 1;
	if (tag) {
		/* An echo-window call is not timed: its tick holds run_delay. */
		st->tick[slot] = tp_run_delay();
		st->ns[slot] = bpf_ktime_get_ns();
		return 0;
	}
	tick = tp_entry_readings(target, &ns);
	st->tick[slot] = tick;
	st->ns[slot] = ns; /* check: 0 for an unchecked call */
	return 0;
}

/* tp_task_enter pushes target's clock reading(s) with no frame tag. */
static __always_inline int tp_task_enter(__u32 target)
{
	return tp_task_enter_frame(target, 0);
}

/* tp_task_unwind looks for target's entry below the top of the current
 * thread's stack, whose top entry belongs to another target. Found: the
 * entries above it lost their exits (longjmp, a thread unwound); they are
 * counted as orphans and dropped, so that target's entry is on top, and it
 * returns 1. Else target's entry was never seen (the exit probe was
 * attached first): it returns 0 and leaves the stack alone. A global
 * function, so that the verifier checks its loops once: inlined, it walked
 * them, and every exit program after them, once for each depth the search
 * can stop at (most of the exit programs' verification, and of a short
 * run's start). */
__attribute__((noinline)) int tp_task_unwind(__u32 target)
{
	struct tp_tstack *st = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0, 0);
	__u32 depth, i, d, n;

	if (!st)
		return 0;
	depth = st->depth;
	for (i = 2; i <= TP_MAX_DEPTH; i++) {
		if (depth - i < st->floor || depth < i)
			break;
		if (st->target[(depth - i) & (TP_MAX_DEPTH - 1)] == target)
			break;
	}
	if (i > TP_MAX_DEPTH || depth < i || depth - i < st->floor)
		return 0;
	/* The i-1 entries above target's lost their exits. The loop reads
	 * the depths back from memory (volatile), so that the verifier knows
	 * neither i nor the range the search gave depth, and walks the loop
	 * once rather than once for each i. */
	d = *(volatile __u32 *)&st->depth;
	st->depth = depth - (i - 1);
	n = d - *(volatile __u32 *)&st->depth;
	for (__u32 k = 1; k < TP_MAX_DEPTH; k++) {
		__u32 lost = (d - k) & (TP_MAX_DEPTH - 1);

		if (k > n)
			break;
		if (st->frame[lost] & TP_FRAME_UNCOUNTED)
			continue;
		tp_orphan(st->target[lost]);
		if (tp_windowed)
			tp_inflight_add(st->target[lost], -1);
	}
	return 1;
}

/* tp_task_exit pops target's entry from the current thread's stack and
 * accounts the call. When the top entry belongs to another target, either
 * exits were missed (longjmp, a thread unwound) and target's entry lies
 * deeper: the entries above it are dropped as orphans; or target's entry
 * was never seen (the exit probe was attached first): the exit is an
 * orphan and the stack is left alone. */
static __always_inline int tp_task_exit_at(void *ctx, __u32 target, __u64 stack_flags, __u64 tick,
					   __u64 ns)
{
	struct tp_tstack *st;
	struct tp_counts *c;
	__u32 slot, depth;

	c = bpf_map_lookup_elem(&tp_counters, &target);
	if (!c)
		return 0;
	st = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0, 0);
	if (!st || st->depth == 0) {
		if (tp_other_process())
			return 0; /* a forked child's return: not the target's */
		/* Exit without entry; windowed runs attach mid-call every
		 * window (the exit first), so there it is no orphan. */
		if (!tp_windowed)
			c->orphans++;
		tp_stat_no_entry();
		return 0;
	}
	if (st->depth == st->floor) {
		/* The exit of an overwritten entry (counted at its overwrite). */
		st->depth--;
		st->floor--;
		return 0;
	}
	depth = st->depth;
	slot = (depth - 1) & (TP_MAX_DEPTH - 1);
	if (st->target[slot] != target) {
		/* Rare: target's entry lies below the top, or nowhere. */
		if (!tp_task_unwind(target)) {
			if (tp_other_process())
				return 0;
			if (!tp_windowed)
				c->orphans++; /* exit without entry */
			tp_stat_no_entry();
			return 0;
		}
		depth = st->depth;
		slot = (depth - 1) & (TP_MAX_DEPTH - 1);
	}
	st->depth = depth - 1;
	if (st->frame[slot] & TP_FRAME_UNCOUNTED)
		return 0; /* entered outside a window */
	if (tp_windowed)
		tp_inflight_add(target, -1);
	if (tp_echo_skip(target, st->frame[slot], st->ns[slot], ns))
		return 0;
	tp_close(ctx, c, target, tick, ns, st->tick[slot], st->ns[slot], stack_flags);
	return 0;
}

static __always_inline int tp_task_exit(void *ctx, __u32 target, __u64 stack_flags)
{
	__u64 ns = 0, tick;

	/* Read the clock first, as close to the timed code as possible. */
	if (tp_need_ns())
		ns = bpf_ktime_get_ns();
	tick = tp_now_tick(ns);
	return tp_task_exit_at(ctx, target, stack_flags, tick, ns);
}

/* tp_uclose accounts the call of target entered with the readings etick,
 * ens and tagged frame, exiting now (tick, ns). */
static __always_inline int tp_uclose(void *ctx, __u32 target, __u64 frame, __u64 tick, __u64 ns,
				     __u64 etick, __u64 ens, __u64 stack_flags)
{
	struct tp_counts *c;

	if (frame & TP_FRAME_UNCOUNTED)
		return 0; /* entered outside a window */
	if (tp_echo_skip(target, frame, ens, ns))
		return 0;
	c = bpf_map_lookup_elem(&tp_counters, &target);
	if (!c)
		return 0;
	if (tp_windowed)
		tp_inflight_add(target, -1);
	tp_close(ctx, c, target, tick, ns, etick, ens, stack_flags);
	return 0;
}

/* tp_utarget is the target index of a u(ret)probe program's call. */
static __always_inline __u32 tp_utarget(void *ctx)
{
	if (tp_one_target != 0)
		return tp_one_target - 1;
	return (__u32)bpf_get_attach_cookie(ctx);
}

/* tp_task_uexit_at is tp_task_uexit with the exit's clock readings taken. */
static __always_inline int tp_task_uexit_at(struct pt_regs *ctx, __u64 stack_flags, __u64 tick,
					    __u64 ns)
{
	struct tp_tstack *st;
	__u32 slot;

	st = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0, 0);
	if (st && st->depth != st->floor) {
		slot = (st->depth - 1) & (TP_MAX_DEPTH - 1);
		__u64 frame = st->frame[slot];

		if (frame != 0 && (frame & ~TP_FRAME_TAGS) + 8 == ctx->sp) {
			st->depth--;
			return tp_uclose(ctx, st->target[slot], frame, tick, ns, st->tick[slot],
					 st->ns[slot], stack_flags);
		}
	}
	return tp_task_exit_at(ctx, tp_utarget(ctx), stack_flags, tick, ns);
}

/* tp_exit_readings reads the exit clock(s): the tick, and ns when needed. */
static __always_inline __u64 tp_exit_readings(__u64 *ns)
{
	*ns = 0;
	if (tp_need_ns())
		*ns = bpf_ktime_get_ns();
	return tp_now_tick(*ns);
}

/* tp_task_uexit is tp_task_exit for a uretprobe whose entry pushed its
 * frame (tp_task_enter_frame with the entry's sp). The uretprobe runs after
 * the RET popped the return address, so its sp is the entry's plus 8. When
 * the top entry carries that frame it is this call's entry, and its target
 * is the one pushed: the exit needs no bpf_get_attach_cookie, a helper call
 * (~20 ns on this machine, bench/bpfcost). Otherwise (an exit whose entry
 * was missed, exits lost to a longjmp) it falls back to tp_task_exit's
 * search by target. A function that tail-jumps to another target shares
 * its frame with it; their exits come innermost first, which is the stack's
 * order, so each still pops its own entry. What the frame cannot tell: a
 * stale entry (its exit lost to a longjmp) at the very frame of a later call
 * whose own entry was never pushed; entries are pushed for every call while
 * the exit probe is attached, so that needs a failed task-storage creation. */
static __always_inline int tp_task_uexit(struct pt_regs *ctx, __u64 stack_flags)
{
	__u64 ns, tick;

	/* Read the clock first, as close to the timed code as possible. */
	tick = tp_exit_readings(&ns);
	return tp_task_uexit_at(ctx, stack_flags, tick, ns);
}

/*
 * The frame table: the fast path of user functions in one process. A
 * call's frame, the entry's sp (the address of its return address), names
 * the call among every call in flight in the process: threads have
 * disjoint stacks, and nested calls have distinct frames, except a call
 * that tail-jumps to another target, which shares its frame. And the exit
 * knows the frame without a helper call: a uretprobe runs after the RET,
 * at sp = frame + 8. So an entry keeps its readings in tp_frames[h(frame)]
 * of an array (h: Fibonacci hashing of the frame), and the exit finds them
 * there: no bpf_get_current_task_btf and no bpf_task_storage_get (16-22
 * and 28-31 ns a call here, bench/bpfcost), only an array lookup the
 * verifier inlines. It does not depend on the CPU, so a thread that
 * migrates between its entry and its exit finds its entry.
 *
 * A slot is claimed by an atomic compare-and-swap of its frame from 0, so
 * that two threads whose frames share a slot cannot mix their readings;
 * the call that finds its slot held by another frame goes to the thread's
 * stack in task storage (tp_task_enter_frame), where its exit finds it
 * (tp_task_uexit_at). A call that finds its own frame in the slot (a tail
 * call to another target, or an entry whose exit was lost to a longjmp)
 * moves the older entry to the thread's stack and takes the slot: exits at
 * one frame come innermost first. The exit releases the slot with a
 * compare-and-swap too, so that of two exits at the same frame (a child
 * forked inside the call returning through its copy of the uretprobe
 * beside the parent) only one takes the entry.
 *
 * Only where frames are unique: every probed thread in one process
 * (tp_filter_tgid set; the kernel filters uprobes by process, and the
 * exit of a single link checks it, see tp_frame_uexit). Recursion has no
 * depth limit here: each level has its own frame.
 */
#define TP_FRAME_BITS 14
struct tp_frame {
	__u64 frame; /* entry sp; 0: free */
	__u64 tick;
	__u64 ns;
	__u32 target;
	__u32 flags; /* TP_FRAME_UNCOUNTED */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << TP_FRAME_BITS);
	__type(key, __u32);
	__type(value, struct tp_frame);
} tp_frames SEC(".maps");

static __always_inline struct tp_frame *tp_frame_slot(__u64 frame)
{
	__u32 i = (__u32)((frame * 0x9E3779B97F4A7C15ULL) >> (64 - TP_FRAME_BITS));

	return bpf_map_lookup_elem(&tp_frames, &i);
}

/* tp_frame_enter is the entry of a call of target at frame sp. */
static __always_inline int tp_frame_enter(__u32 target, __u64 sp)
{
	struct tp_frame *f;
	struct tp_tstack *st;
	__u64 old, ns, tag;

	if (tp_filter_tgid == 0)
		return tp_task_enter_frame(target, sp);
	f = tp_frame_slot(sp);
	if (!f)
		return tp_task_enter_frame(target, sp);
	tag = tp_echo_tag();
	old = __sync_val_compare_and_swap(&f->frame, 0, sp);
	if (old != 0 && old != sp)
		return tp_task_enter_frame(target, sp); /* another call's slot */
	if (old == sp) {
		/* Our own frame: the older entry moves to the thread's stack. */
		st = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0,
					  BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (st)
			tp_task_push(st, f->target, sp | f->flags, f->tick, f->ns);
		else if (!(f->flags & TP_FRAME_UNCOUNTED))
			tp_orphan(f->target);
	}
	f->target = target;
	f->flags = (__u32)(tp_window_flag(target) | tag);
	if (tag) {
		/* An echo-window call is not timed: its tick holds run_delay. */
		f->tick = tp_run_delay();
		f->ns = bpf_ktime_get_ns();
		return 0;
	}
	f->tick = tp_entry_readings(target, &ns);
	f->ns = ns;
	return 0;
}

/* tp_frame_uexit is the exit of a uretprobe whose entry was tp_frame_enter:
 * its frame is sp - 8. check_process: the kernel may run the program for
 * another process than the one the entries came from: a single uretprobe
 * link (a perf event) runs it for a child forked inside the call, which
 * returns through its copy of the probe at the parent's frame; the
 * multi-uprobe link filters by process at return too (uprobe_prog_run). */
static __always_inline int tp_frame_uexit(struct pt_regs *ctx, __u64 stack_flags, int check_process)
{
	__u64 ns, tick, key = ctx->sp - 8, etick, ens, flags;
	struct tp_frame *f;
	__u32 target;

	/* Read the clock first, as close to the timed code as possible. */
	tick = tp_exit_readings(&ns);
	if (tp_filter_tgid == 0 || (check_process && tp_other_process()))
		return tp_task_uexit_at(ctx, stack_flags, tick, ns);
	f = tp_frame_slot(key);
	if (!f || f->frame != key)
		return tp_task_uexit_at(ctx, stack_flags, tick, ns);
	target = f->target;
	flags = f->flags;
	etick = f->tick;
	ens = f->ns;
	if (__sync_val_compare_and_swap(&f->frame, key, 0) != key)
		return tp_task_uexit_at(ctx, stack_flags, tick, ns);
	return tp_uclose(ctx, target, flags, tick, ns, etick, ens, stack_flags);
}

/* tp_echo_hit is the echo of a user function's entry (echo.h): the cookie
 * holds the target in its low 32 bits and, in its high 32, the bytes the
 * instruction under the entry probe moved sp down, so that sp plus those
 * bytes is the entry's frame. It accounts the gap from the entry's reading
 * to its own, which it reads first. */
static __always_inline int tp_echo_hit(struct pt_regs *ctx)
{
	__u64 t2 = bpf_ktime_get_ns(), cookie, key, rd, tag;
	struct tp_tstack *st;
	struct tp_frame *f;
	__u32 target, slot;

	cookie = bpf_get_attach_cookie(ctx);
	target = (__u32)cookie;
	key = ctx->sp + (cookie >> 32);
	rd = tp_run_delay();
	if (tp_filter_tgid != 0) {
		f = tp_frame_slot(key);
		if (f && f->frame == key && f->target == target) {
			if ((f->flags & (TP_FRAME_ECHO | TP_FRAME_ECHOED)) != TP_FRAME_ECHO)
				return 0; /* entered before the window opened */
			f->flags |= TP_FRAME_ECHOED;
			tp_echo_account(target, t2 - f->ns, rd - f->tick);
			return 0;
		}
	}
	st = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0, 0);
	if (st && st->depth != st->floor) {
		slot = (st->depth - 1) & (TP_MAX_DEPTH - 1);
		tag = st->frame[slot];
		if ((tag & ~TP_FRAME_TAGS) == key && st->target[slot] == target) {
			if ((tag & (TP_FRAME_ECHO | TP_FRAME_ECHOED)) != TP_FRAME_ECHO)
				return 0;
			st->frame[slot] = tag | TP_FRAME_ECHOED;
			tp_echo_account(target, t2 - st->ns[slot], rd - st->tick[slot]);
			return 0;
		}
	}
	tp_echo_missed(target);
	return 0;
}

/* tp_echo_keyed is the echo of an entry kept in tp_entries under key id
 * (Go functions): t2 is the echo's clock reading, rd its run_delay. */
static __always_inline int tp_echo_keyed(__u64 id, __u32 target, __u64 t2, __u64 rd)
{
	struct tp_key key = { .id = id, .target = target };
	struct tp_entry *e = bpf_map_lookup_elem(&tp_entries, &key);
	__u32 slot;
	__u64 tick;

	if (!e || e->depth == e->floor) {
		tp_echo_missed(target);
		return 0;
	}
	slot = (e->depth - 1) & (TP_MAX_DEPTH - 1);
	tick = e->tick[slot];
	if ((tick & TP_TICK_ECHO_BITS) != TP_TICK_ECHO)
		return 0; /* entered before the window opened, or echoed */
	e->tick[slot] = tick | TP_TICK_ECHOED;
	tp_echo_account(target, t2 - e->ns[slot], rd - (tick & ~TP_TICK_ECHO_BITS));
	return 0;
}

/*
 * TP_UPROBE_PAIR defines the entry and exit programs of user functions,
 * entry in section esec and exit in xsec (timing.bpf.c on single links,
 * umulti.bpf.c on multi-uprobe links): the entry keeps its readings by
 * frame (tp_frame_enter) and the exit finds them by its frame, without
 * the cookie (tp_frame_uexit); check_process as tp_frame_uexit's.
 */
#define TP_UPROBE_PAIR(entry, esec, exit, xsec, check_process)                               \
	SEC(esec) int entry(struct pt_regs *ctx)                                             \
	{                                                                                    \
		return tp_frame_enter(tp_utarget(ctx), ctx->sp);                             \
	}                                                                                    \
	SEC(xsec) int exit(struct pt_regs *ctx)                                              \
	{                                                                                    \
		return tp_frame_uexit(ctx, BPF_F_USER_STACK | TP_STACK_COPY, check_process); \
	}

#endif /* TICKPROF_TIMING_H */
