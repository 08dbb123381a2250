//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* Off-CPU time by stack for `tickprof sample --off-cpu` and `--wall`.
 *
 * off_switch runs on the raw tracepoint sched/sched_switch, in the context
 * of the task leaving the CPU (prev). Every time a target's thread leaves
 * the CPU (an interval off CPU begins), the interval is sampled with the
 * probability off_threshold / 2^32 (every one when off_exact is set):
 * bpf_get_prandom_u32, drawn independently of the interval and its length.
 * For a sampled interval the program writes a start record (struct off_hdr
 * followed by a sample record, struct sample_hdr of sample_types.h: the
 * kernel stack, a copy of the user stack with the user registers, and the
 * frame-pointer walk of the user stack) and keeps the start time by thread
 * in off_starts. When that thread is switched back in (next), the interval
 * ends: the program writes an end record with its start and end and
 * forgets the thread. User space joins the two and estimates each stack's
 * off-CPU time as sum(d / p) (Horvitz-Thompson; docs/statistics.md, "Off-CPU
 * time").
 *
 * Why the thread left: state OFF_RUNNABLE when it was preempted or left
 * runnable (it waits for a CPU), OFF_BLOCKED when it went to sleep (the
 * kernel stack is the blocking path). A thread leaving for good (TASK_DEAD)
 * starts no interval.
 *
 * What is lost is counted by reason (OFF_STAT_*): a start that the map of
 * open intervals had no room for, a start or an end record the ring buffer
 * had no room for. The ring buffer is the sampling program's, shared
 * (user space passes it, and the targets map, at load).
 */
#include "sample_types.h"
#include <bpf/bpf_helpers.h>
#include "ustack.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define OFF_MAX_DEPTH 127
#define OFF_MAX_STACK 28672
#define OFF_IPS_BYTES (2 * OFF_MAX_DEPTH * 8)

#define OFF_RUNNABLE 0
#define OFF_BLOCKED 1

#define TASK_DEAD_BITS (0x0080 | 0x0010 | 0x0020) /* TASK_DEAD, EXIT_DEAD, EXIT_ZOMBIE */

/* The sampling threshold: an interval is sampled when a random 32-bit
 * number is below it; OFF_EXACT takes every interval. User space may change
 * it while the program runs (to keep a cost budget as the switch rate
 * changes); each start record carries the threshold it was drawn with. */
#define OFF_EXACT 0xffffffffU
volatile __u32 off_threshold = OFF_EXACT;

/* Set before load: bytes of user stack copied per start record (0: frame
 * pointers only); every process is a target (filter_all in
 * sample.bpf.c). */
volatile const __u32 off_stack_bytes = 0;
volatile const __u8 off_all = 0;

/* Header of both records: an end record is this alone; a start record is
 * followed by a sample record (struct sample_hdr and its data). */
struct off_hdr {
	__u32 kind;
	__u32 state; /* OFF_RUNNABLE or OFF_BLOCKED */
	__u32 pid;
	__u32 tid;
	__u64 start_ns;
	__u64 end_ns;    /* end records */
	__u32 threshold; /* start records: off_threshold when drawn */
	__u32 reason;    /* goroutine start records: gopark's wait reason */
	__u64 g;         /* goroutine records: the goroutine (its g's address) */
	__u64 ready_ns;  /* goroutine end records: made runnable (0: not seen) */
};

struct off_buf {
	struct off_hdr off;
	struct sample_hdr hdr;
	__u8 data[OFF_IPS_BYTES + OFF_MAX_STACK];
};

/* An open (sampled) interval: when it began and why. */
struct off_start {
	__u64 start_ns;
	__u32 state;
	__u32 pid;
};

enum {
	OFF_STAT_SWITCHES = 0,   /* target threads leaving a CPU */
	OFF_STAT_SAMPLED = 1,    /* of those, intervals sampled */
	OFF_STAT_ENDED = 2,      /* sampled intervals ended (end record written) */
	OFF_STAT_MAP_FULL = 3,   /* sampled but off_starts was full: not recorded */
	OFF_STAT_RING_START = 4, /* sampled but the start record was dropped */
	OFF_STAT_RING_END = 5,   /* ended but the end record was dropped */
	OFF_STAT_UNSEEN = 6,     /* open interval of a thread seen running: its
				  * switch-in was not seen; dropped */
	/* The same for goroutines (go_park, go_execute). */
	OFF_STAT_GO_PARKS = 7,
	OFF_STAT_GO_SAMPLED = 8,
	OFF_STAT_GO_ENDED = 9,
	OFF_STAT_GO_MAP_FULL = 10,
	OFF_STAT_GO_RING_START = 11,
	OFF_STAT_GO_RING_END = 12,
	OFF_STAT_GO_UNSEEN = 13,
	OFF_STAT_NR = 14,
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} samples SEC(".maps");

/* Open sampled intervals by thread ID. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct off_start);
} off_starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct off_buf);
} off_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFF_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} off_stats SEC(".maps");

/* The raw tracepoint's context: the tracepoint's arguments. */
struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

struct task_struct___off {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

static __always_inline void off_bump(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&off_stats, &idx);
	if (v)
		(*v)++;
}

static __always_inline int off_target(__u32 tgid)
{
	if (tgid == 0)
		return 0;
	if (off_all)
		return 1;
	return bpf_map_lookup_elem(&targets, &tgid) != 0;
}

/* off_frames turns bpf_get_stack's result n into a number of frames,
 * setting err or full in flags (sample.bpf.c's stack_frames). */
static __always_inline long off_frames(long n, __u32 *flags, __u32 err, __u32 full)
{
	if (n < 0) {
		*flags |= err;
		n = 0;
	}
	n /= 8;
	if (n > OFF_MAX_DEPTH)
		n = OFF_MAX_DEPTH;
	if (n == OFF_MAX_DEPTH)
		*flags |= full;
	return n;
}

/* off_user_regs reads the current task's saved user registers into h;
 * false when it has none (a kernel thread). */
static __always_inline int off_user_regs(struct sample_hdr *h)
{
	struct sample_pt_regs *r = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());

	if (!r || bpf_probe_read_kernel(&h->user_ip, 8, &r->ip) ||
	    bpf_probe_read_kernel(&h->user_sp, 8, &r->sp) ||
	    bpf_probe_read_kernel(&h->user_bp, 8, &r->bp))
		return 0;
	return h->user_sp != 0;
}

/* off_user_walk is the frame-pointer walk of the user stack after the
 * kernel addresses and the stack copy, and its length in addresses. */
static __always_inline long off_user_walk(void *ctx, struct off_buf *b, long kn, __u32 *flags)
{
	__u64 pos = kn * 8 + b->hdr.stack_len;

	asm volatile("" : "+r"(pos));
	if (pos > OFF_IPS_BYTES + OFF_MAX_STACK - OFF_MAX_DEPTH * 8)
		return 0;
	return off_frames(bpf_get_stack(ctx, &b->data[pos], OFF_MAX_DEPTH * 8, BPF_F_USER_STACK),
			  flags, FLAG_USER_ERR, FLAG_USER_FULL);
}

/* off_fill fills b's sample record with the current task's stacks and
 * returns its size. */
static __always_inline __u64 off_fill(void *ctx, struct off_buf *b, __u32 tgid, __u32 tid,
				      __u64 now)
{
	__u32 flags = 0;
	long kn, un;
	__u64 sp, size;

	kn = off_frames(bpf_get_stack(ctx, &b->data[0], OFF_MAX_DEPTH * 8, 0), &flags,
			FLAG_KERN_ERR, FLAG_KERN_FULL);
	b->hdr.kind = REC_SAMPLE;
	b->hdr.pid = tgid;
	b->hdr.tid = tid;
	b->hdr.cpu = bpf_get_smp_processor_id();
	b->hdr.time_ns = now;
	b->hdr.kern_len = kn;
	b->hdr.sp_word = 0;
	b->hdr.user_ip = 0;
	b->hdr.user_sp = 0;
	b->hdr.user_bp = 0;
	b->hdr.stack_len = 0;
	b->hdr.go_len = 0;
	b->hdr.go_frame = 0;
	b->hdr.go_sp = 0;
	b->hdr.py_len = 0;
	b->hdr.py_err = 0;
	b->hdr.py_pad = 0;
	if (off_user_regs(&b->hdr))
		flags |= FLAG_REGS;
	sp = b->hdr.user_sp;
	if ((flags & FLAG_REGS) && off_stack_bytes > 0)
		b->hdr.stack_len = ustack_copy(b->data, OFF_IPS_BYTES + OFF_MAX_STACK,
					       OFF_MAX_STACK, kn * 8, sp, off_stack_bytes,
					       ustack_end(sp, OFF_MAX_STACK));
	un = off_user_walk(ctx, b, kn, &flags);
	b->hdr.user_len = un;
	if (un > 0 && sp &&
	    bpf_probe_read_user(&b->hdr.sp_word, sizeof(b->hdr.sp_word), (void *)sp) == 0)
		flags |= FLAG_SP_WORD;
	b->hdr.flags = flags;
	size = sizeof(struct off_hdr) + sizeof(struct sample_hdr) + (kn + un) * 8 +
	       b->hdr.stack_len;
	if (size > sizeof(struct off_buf))
		size = sizeof(struct off_buf);
	return size;
}

/* off_begin samples the interval off CPU that the current task (a
 * target's thread) begins now, and records it when sampled. */
static __always_inline void off_begin(void *ctx, __u64 id, __u32 state, __u64 now)
{
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct off_start st = { .start_ns = now, .state = state, .pid = tgid };
	struct off_buf *b;
	__u64 size;
	__u32 thr;

	off_bump(OFF_STAT_SWITCHES);
	/* The thread is running: an interval still open for it ended at a
	 * switch-in this program did not see. Its end is unknown: dropped,
	 * rather than run on to the next switch-in. */
	if (bpf_map_lookup_elem(&off_starts, &tid) && bpf_map_delete_elem(&off_starts, &tid) == 0)
		off_bump(OFF_STAT_UNSEEN);
	thr = off_threshold;
	if (thr != OFF_EXACT && bpf_get_prandom_u32() >= thr)
		return;
	off_bump(OFF_STAT_SAMPLED);
	b = bpf_map_lookup_elem(&off_scratch, &zero);
	if (!b)
		return;
	size = off_fill(ctx, b, tgid, tid, now);
	/* The interval starts when the stacks are taken: the time this
	 * program takes would otherwise lengthen sampled intervals only, and
	 * the estimate would count it for every interval. */
	now = bpf_ktime_get_ns();
	st.start_ns = now;
	if (bpf_map_update_elem(&off_starts, &tid, &st, BPF_ANY) < 0) {
		off_bump(OFF_STAT_MAP_FULL);
		return;
	}
	b->off.kind = REC_OFF_START;
	b->off.state = state;
	b->off.pid = tgid;
	b->off.tid = tid;
	b->off.start_ns = now;
	b->off.end_ns = 0;
	b->off.threshold = thr;
	b->off.reason = 0;
	b->off.g = 0;
	b->off.ready_ns = 0;
	if (bpf_ringbuf_output(&samples, b, size, 0) < 0) {
		off_bump(OFF_STAT_RING_START);
		bpf_map_delete_elem(&off_starts, &tid);
	}
}

/* off_end ends the sampled interval of thread tid, if it has one open. */
static __always_inline void off_end(__u32 tid, __u64 now)
{
	struct off_start *st = bpf_map_lookup_elem(&off_starts, &tid);
	struct off_hdr h = {};
	__u64 wake = BPF_RB_NO_WAKEUP;

	if (!st)
		return;
	h.kind = REC_OFF_END;
	h.state = st->state;
	h.pid = st->pid;
	h.tid = tid;
	h.start_ns = st->start_ns;
	h.end_ns = now;
	bpf_map_delete_elem(&off_starts, &tid);
	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > (2 << 20))
		wake = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&samples, &h, sizeof(h), wake) < 0)
		off_bump(OFF_STAT_RING_END);
	else
		off_bump(OFF_STAT_ENDED);
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct
 * *next, unsigned int prev_state): prev is the current task. */
SEC("raw_tp/sched_switch")
int off_switch(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct___off *next = (void *)ctx->args[2];
	__u32 prev_state = (__u32)ctx->args[3];
	__u32 state = OFF_BLOCKED;
	__u32 ntid = BPF_CORE_READ(next, pid);

	if (ntid != 0)
		off_end(ntid, now);
	if ((__u32)id == 0 || !off_target(id >> 32) || (prev_state & TASK_DEAD_BITS))
		return 0;
	if (ctx->args[0] || prev_state == 0)
		state = OFF_RUNNABLE;
	off_begin(ctx, id, state, now);
	return 0;
}

/* Goroutines (Go executables: user space attaches these three uprobes to
 * the Go runtime of each target executable).
 *
 * A goroutine that blocks (channel, mutex, select, sleep, network) does not
 * block its thread: the runtime parks it and the thread runs other
 * goroutines or sleeps in the scheduler, so sched_switch sees the
 * scheduler's stack, not the goroutine's. The goroutine's own interval off
 * CPU is from runtime.gopark (it parks, with its wait reason) to
 * runtime.execute (a thread runs it again); runtime.ready, on the way,
 * makes it runnable: park to ready it is blocked, ready to execute it waits
 * for a thread. Each park is sampled with off_threshold, as a thread's
 * interval is; a sampled one writes a REC_GO_START record (struct off_hdr
 * and a sample record of the goroutine's stack at gopark's entry, by frame
 * pointers) and keeps its start by goroutine (the process and the g's
 * address) in go_starts; ready notes its time there, and execute writes
 * the REC_GO_END record and forgets it. A goroutine preempted (or
 * yielding) leaves without a park: runtime.goschedImpl makes it runnable,
 * and go_preempt begins a runnable interval for it, with the stack saved
 * in its g.sched.
 *
 * Go's register ABI (ABIInternal, amd64): at a Go function's entry the
 * current g is in r14 and the integer arguments are in ax, bx, cx, ...:
 * gopark(unlockf, lock, reason waitReason, ...) has the reason (a uint8)
 * in cx; ready(gp, ...) and execute(gp, ...) have gp in ax. These are entry
 * uprobes only: a uretprobe would corrupt a Go stack that moves. */

/* The offsets in runtime.g of g.sched.sp, .pc and .bp, set by user space
 * when it attaches go_preempt (from the executable's DWARF; 0: unknown,
 * go_preempt records nothing). Every traced executable shares them. */
volatile __u32 go_sched_sp = 0;
volatile __u32 go_sched_pc = 0;
volatile __u32 go_sched_bp = 0;

struct go_key {
	__u32 pid;
	__u32 pad;
	__u64 g;
};

/* An open (sampled) goroutine interval. */
struct go_start {
	__u64 start_ns;
	__u64 ready_ns;
	__u32 tid;
	__u32 reason;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct go_key);
	__type(value, struct go_start);
} go_starts SEC(".maps");

#define GO_FLAGS_JBE 0x41 /* CF | ZF: JBE jumps */

/* go_skip says whether this firing is one to ignore: on the stack check's
 * JBE (cookie 1), the one before runtime.morestack. */
static __always_inline int go_skip(struct sample_pt_regs *regs)
{
	return bpf_get_attach_cookie(regs) == 1 && (regs->flags & GO_FLAGS_JBE);
}

/* go_walk walks the frame pointers of a goroutine that does not run from
 * its saved frame pointer bp into ips (after its pc), as bpf_get_stack
 * walks the current stack; returns the number of addresses. */
static __always_inline long go_walk(__u64 *ips, __u64 pc, __u64 bp, __u32 *flags)
{
	__u64 fr[2];
	long n = 1;

	ips[0] = pc;
	for (int i = 1; i < OFF_MAX_DEPTH; i++) {
		if (bp == 0 || bpf_probe_read_user(fr, sizeof(fr), (void *)bp) || fr[1] == 0)
			return n;
		ips[i] = fr[1];
		n = i + 1;
		if (fr[0] <= bp) /* a caller's frame is above its callee's */
			return n;
		bp = fr[0];
	}
	*flags |= FLAG_USER_FULL;
	return n;
}

/* go_fill fills b's sample record with a goroutine's user stack and
 * returns its size: from the registers at a Go function's entry (regs),
 * or, when regs is null, from its saved context pc, sp, bp (g.sched). No
 * kernel stack and no stack copy: Go keeps frame pointers. At an entry the
 * function has not pushed its frame yet, and in a context saved by
 * morestack neither has the function that called it, so the walk skips
 * that function's caller; sp_word (the return address at sp) gives it
 * back to user space. */
static __always_inline __u64 go_fill(struct sample_pt_regs *regs, struct off_buf *b, __u32 tgid,
				     __u32 tid, __u64 now, __u64 pc, __u64 sp, __u64 bp)
{
	__u32 flags = 0;
	long un;

	b->hdr.kind = REC_SAMPLE;
	b->hdr.pid = tgid;
	b->hdr.tid = tid;
	b->hdr.cpu = bpf_get_smp_processor_id();
	b->hdr.time_ns = now;
	b->hdr.kern_len = 0;
	b->hdr.sp_word = 0;
	b->hdr.user_ip = pc;
	b->hdr.user_sp = sp;
	b->hdr.user_bp = bp;
	b->hdr.stack_len = 0;
	b->hdr.go_len = 0;
	b->hdr.go_frame = 0;
	b->hdr.go_sp = 0;
	b->hdr.py_len = 0;
	b->hdr.py_err = 0;
	b->hdr.py_pad = 0;
	if (regs)
		un = off_frames(bpf_get_stack(regs, &b->data[0], OFF_MAX_DEPTH * 8,
					      BPF_F_USER_STACK),
				&flags, FLAG_USER_ERR, FLAG_USER_FULL);
	else
		un = go_walk((__u64 *)&b->data[0], pc, bp, &flags);
	b->hdr.user_len = un;
	if (un > 0 && bpf_probe_read_user(&b->hdr.sp_word, sizeof(b->hdr.sp_word), (void *)sp) == 0)
		flags |= FLAG_SP_WORD;
	b->hdr.flags = flags;
	return sizeof(struct off_hdr) + sizeof(struct sample_hdr) + un * 8;
}

/* go_begin samples the interval off CPU goroutine k begins now, in state
 * (OFF_BLOCKED: parked with reason; OFF_RUNNABLE: preempted), and records
 * it when sampled; its stack as go_fill takes it. */
static __always_inline void go_begin(struct sample_pt_regs *regs, struct go_key *k, __u32 state,
				     __u32 reason, __u64 pc, __u64 sp, __u64 bp)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0, thr;
	struct go_start st = { .tid = tid, .reason = reason };
	struct off_buf *b;
	__u64 size, now;

	off_bump(OFF_STAT_GO_PARKS);
	/* The goroutine runs: an interval still open for it ended at an
	 * execute this program did not see (dropped, as off_begin does). */
	if (bpf_map_lookup_elem(&go_starts, k) && bpf_map_delete_elem(&go_starts, k) == 0)
		off_bump(OFF_STAT_GO_UNSEEN);
	thr = off_threshold;
	if (thr != OFF_EXACT && bpf_get_prandom_u32() >= thr)
		return;
	off_bump(OFF_STAT_GO_SAMPLED);
	b = bpf_map_lookup_elem(&off_scratch, &zero);
	if (!b)
		return;
	size = go_fill(regs, b, k->pid, tid, bpf_ktime_get_ns(), pc, sp, bp);
	if (size > sizeof(struct off_buf))
		size = sizeof(struct off_buf);
	/* As off_begin: the interval starts once the stack is taken. */
	now = bpf_ktime_get_ns();
	st.start_ns = now;
	if (bpf_map_update_elem(&go_starts, k, &st, BPF_ANY) < 0) {
		off_bump(OFF_STAT_GO_MAP_FULL);
		return;
	}
	b->off.kind = REC_GO_START;
	b->off.state = state;
	b->off.pid = k->pid;
	b->off.tid = tid;
	b->off.start_ns = now;
	b->off.end_ns = 0;
	b->off.threshold = thr;
	b->off.reason = reason;
	b->off.g = k->g;
	b->off.ready_ns = 0;
	if (bpf_ringbuf_output(&samples, b, size, 0) < 0) {
		off_bump(OFF_STAT_GO_RING_START);
		bpf_map_delete_elem(&go_starts, k);
	}
}

/* go_park: runtime.gopark's entry, on the goroutine that parks. */
SEC("uprobe")
int go_park(struct sample_pt_regs *regs)
{
	struct go_key k = { .pid = bpf_get_current_pid_tgid() >> 32, .g = regs->r14 };

	if (!off_target(k.pid) || k.g == 0 || go_skip(regs))
		return 0;
	go_begin(regs, &k, OFF_BLOCKED, regs->cx & 0xff, regs->ip, regs->sp, regs->bp);
	return 0;
}

/* go_preempt: runtime.goschedImpl's entry (gp preempted, or yielding by
 * runtime.Gosched), on the system stack: gp leaves the CPU runnable, with
 * no park, and waits to be run again. Its stack is the context the
 * scheduler saved in gp.sched. */
SEC("uprobe")
int go_preempt(struct sample_pt_regs *regs)
{
	struct go_key k = { .pid = bpf_get_current_pid_tgid() >> 32, .g = regs->ax };
	__u64 sp = 0, pc = 0, bp = 0;

	if (!off_target(k.pid) || k.g == 0 || go_sched_sp == 0 || go_skip(regs))
		return 0;
	if (bpf_probe_read_user(&sp, 8, (void *)(k.g + go_sched_sp)) ||
	    bpf_probe_read_user(&pc, 8, (void *)(k.g + go_sched_pc)) ||
	    bpf_probe_read_user(&bp, 8, (void *)(k.g + go_sched_bp)) || sp == 0)
		return 0;
	go_begin(0, &k, OFF_RUNNABLE, 0, pc, sp, bp);
	return 0;
}

/* go_ready: runtime.ready's entry (gp made runnable), on any thread. */
SEC("uprobe")
int go_ready(struct sample_pt_regs *regs)
{
	struct go_key k = { .pid = bpf_get_current_pid_tgid() >> 32, .g = regs->ax };
	struct go_start *st;

	if (go_skip(regs))
		return 0;
	st = bpf_map_lookup_elem(&go_starts, &k);
	if (st && st->ready_ns == 0)
		st->ready_ns = bpf_ktime_get_ns();
	return 0;
}

/* go_execute: runtime.execute's entry (a thread runs gp). */
SEC("uprobe")
int go_execute(struct sample_pt_regs *regs)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	struct go_key k = { .pid = id >> 32, .g = regs->ax };
	struct go_start *st;
	struct off_hdr h = {};
	__u64 wake = BPF_RB_NO_WAKEUP;

	if (go_skip(regs))
		return 0;
	st = bpf_map_lookup_elem(&go_starts, &k);
	if (!st)
		return 0;
	h.kind = REC_GO_END;
	h.state = OFF_BLOCKED;
	h.pid = k.pid;
	h.tid = (__u32)id;
	h.start_ns = st->start_ns;
	h.end_ns = now;
	h.reason = st->reason;
	h.g = k.g;
	h.ready_ns = st->ready_ns;
	bpf_map_delete_elem(&go_starts, &k);
	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > (2 << 20))
		wake = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&samples, &h, sizeof(h), wake) < 0)
		off_bump(OFF_STAT_GO_RING_END);
	else
		off_bump(OFF_STAT_GO_ENDED);
	return 0;
}
