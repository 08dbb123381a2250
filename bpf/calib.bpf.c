//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * calib.bpf.c - programs of `tickprof calibrate` and the benchmark floor.
 *
 * Clock resolution, the slides' method (seed 002, "Program for Measuring
 * r"): read the clock until its value changes, many times in a row, and
 * note each change's increment and the ns time at which it was seen. The
 * cal_edges_* programs do that in BPF, with the same helpers the timing
 * programs read (bpf_jiffies64, bpf_ktime_get_ns), and are run on demand
 * with BPF_PROG_TEST_RUN (BPF_PROG_TYPE_SYSCALL).
 *
 * Clock-read cost: cal_reads_* read a clock CAL_READS times in a bpf_loop;
 * with run-time statistics enabled, (run time - run time of cal_reads_none)
 * / CAL_READS is the cost of one read.
 *
 * The floor: cal_empty_* are empty uprobe/uretprobe and raw-tracepoint
 * programs, the least any entry/exit probe pair can cost.
 */
#include "common.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define CAL_EDGES 33
#define CAL_READS 1000
#define CAL_SPIN (1 << 23) /* bpf_loop's most iterations */

/* Input: the tick of the tick clock (ns). */
__u64 cal_tick_ns = 1000;

/* Output of a cal_edges_* run: cal_v[k] the clock value at change k,
 * cal_t[k] the ns time it was seen; cal_n changes were recorded (index 0
 * is the first change, so cal_n - 1 whole periods). */
__u64 cal_v[CAL_EDGES];
__u64 cal_t[CAL_EDGES];
__u32 cal_n;
__u64 cal_sink;

struct edge_ctx {
	__u64 last;
	__u32 n;
};

static __always_inline long note_edge(struct edge_ctx *e, __u64 v, __u64 t)
{
	__u32 k = e->n;

	if (v == e->last)
		return 0;
	e->last = v;
	if (k >= CAL_EDGES)
		return 1;
	cal_v[k] = v;
	cal_t[k] = t;
	e->n = k + 1;
	return e->n >= CAL_EDGES;
}

static long edge_jiffies(__u64 i, void *c)
{
	__u64 v = bpf_jiffies64();

	if (v == ((struct edge_ctx *)c)->last)
		return 0;
	return note_edge(c, v, bpf_ktime_get_ns());
}

/* tick_div is the tick of the tick clock, 1 ns when unset. */
static __always_inline __u64 tick_div(void)
{
	return cal_tick_ns ? cal_tick_ns : 1;
}

static long edge_tick(__u64 i, void *c)
{
	__u64 t = bpf_ktime_get_ns();

	return note_edge(c, t / tick_div(), t);
}

static long edge_ns(__u64 i, void *c)
{
	__u64 t = bpf_ktime_get_ns();

	return note_edge(c, t, t);
}

/* EDGES_PROG defines the syscall program NAME, which records the changes
 * of a clock (cal_v, cal_t, cal_n) seen by FN in bpf_loop, from the value
 * START. */
#define EDGES_PROG(NAME, FN, START)                      \
	SEC("syscall")                                   \
	int NAME(void *ctx)                              \
	{                                                \
		struct edge_ctx e = { .last = (START) }; \
		bpf_loop(CAL_SPIN, FN, &e, 0);           \
		cal_n = e.n;                             \
		return 0;                                \
	}

EDGES_PROG(cal_edges_jiffies, edge_jiffies, bpf_jiffies64())
EDGES_PROG(cal_edges_tick, edge_tick, bpf_ktime_get_ns() / tick_div())
EDGES_PROG(cal_edges_ns, edge_ns, bpf_ktime_get_ns())

static long read_none(__u64 i, void *c)
{
	*(__u64 *)c += i;
	return 0;
}

static long read_jiffies(__u64 i, void *c)
{
	*(__u64 *)c += bpf_jiffies64();
	return 0;
}

static long read_ktime(__u64 i, void *c)
{
	*(__u64 *)c += bpf_ktime_get_ns();
	return 0;
}

LOOP_PROG(cal_reads_none, CAL_READS, read_none, cal_sink)

LOOP_PROG(cal_reads_jiffies, CAL_READS, read_jiffies, cal_sink)

LOOP_PROG(cal_reads_ktime, CAL_READS, read_ktime, cal_sink)

/* The floor: empty entry/exit programs. */
EMPTY_PROG("uprobe", cal_empty_uentry)
EMPTY_PROG("uretprobe", cal_empty_uexit)
EMPTY_PROG("raw_tracepoint/sys_enter", cal_empty_sys_enter)
EMPTY_PROG("raw_tracepoint/sys_exit", cal_empty_sys_exit)
