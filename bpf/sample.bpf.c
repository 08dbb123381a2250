//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/* PC and stack sampling for `tickprof sample`.
 *
 * sample_cpu runs on a software cpu-clock perf event opened per CPU. It keeps
 * only samples of the target processes (tgid in `targets`, or every
 * non-idle task when filter_all is set) and pushes one variable-size record
 * with the kernel and user stacks (frame-pointer walks by bpf_get_stack) to
 * the ring buffer. Records are written without a wakeup; user space is woken
 * when a quarter of the buffer is filled, when a process is seen for the
 * first time (so its memory map can be read while it lives) and on exec.
 *
 * The alternative design, stacks interned in a stack-trace map and counted
 * in a hash, lives with its benchmark (bench/sample/samplebpf/stackid.bpf.c).
 *
 * count_calls is an entry-only uprobe that counts calls of the functions
 * given to --count; the attach cookie selects the counter.
 */
#include "sample_types.h"
#include <bpf/bpf_helpers.h>
#include "sample_go.h"
#include "python.h"
#include "ustack.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define MAX_DEPTH 127 /* kernel.perf_event_max_stack default */
#define MAX_COUNTED 64

/* Bytes of user stack copied per sample, from the stack pointer up, at most
 * MAX_STACK; 0 turns the copy off (frame-pointer stacks only). Set before
 * load. */
#define MAX_STACK 28672 /* a per-CPU map value is at most 32 KiB */
volatile const __u32 stack_bytes = 0;

/* Set before load: sample every task except the idle task. */
volatile const __u8 filter_all = 0;
/* The reader is woken when the ring holds more than wake_bytes (set from
 * the ring's size at load); below it, records wait for its next poll. */
volatile const __u64 wake_bytes = 2 << 20;

#define IPS_BYTES (2 * MAX_DEPTH * 8)

struct sample_buf {
	struct sample_hdr hdr;
	/* Kernel addresses, the copied user stack (stack_len bytes) and
	 * goroutine stack (go_len), then the user addresses of the
	 * frame-pointer walk, then the Python frames. */
	__u8 data[IPS_BYTES + MAX_STACK + PY_BYTES];
};

/* Counters indexed by STAT_*. */
enum {
	STAT_SEEN = 0,    /* perf events taken by the program */
	STAT_KEPT = 1,    /* samples of a target */
	STAT_DROPPED = 2, /* ring buffer full: sample lost */
	STAT_IDLE = 3,    /* samples of the idle task */
	/* Samples of Python processes, and those whose Python stack is
	 * missing or cut, by reason (python.h PY_ERR_*). */
	STAT_PY = 4,
	STAT_PY_NO_THREAD = 5,
	STAT_PY_READ = 6,
	STAT_PY_DEEP = 7,
	STAT_NR = 8,
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_buf);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_COUNTED);
	__type(key, __u32);
	__type(value, __u64);
} calls SEC(".maps");

/* inc adds one to the counter at key of an array map. */
static __always_inline void inc(void *map, __u32 key)
{
	__u64 *v = bpf_map_lookup_elem(map, &key);
	if (v)
		(*v)++;
}

static __always_inline void bump(__u32 idx)
{
	inc(&stats, idx);
}

static __always_inline int is_target(__u32 tgid)
{
	if (tgid == 0)
		return 0;
	if (filter_all)
		return 1;
	return bpf_map_lookup_elem(&targets, &tgid) != 0;
}

/* keep_sample counts a perf event (seen, idle, kept) and says whether it
 * is a target's, to be recorded. */
static __always_inline int keep_sample(__u32 tgid)
{
	bump(STAT_SEEN);
	if (tgid == 0) {
		bump(STAT_IDLE);
		return 0;
	}
	if (!is_target(tgid))
		return 0;
	bump(STAT_KEPT);
	return 1;
}

/* stack_frames turns bpf_get_stack's result n (bytes, or an error) into
 * frames, at most MAX_DEPTH, setting err or full in flags. */
static __always_inline long stack_frames(long n, __u32 *flags, __u32 err, __u32 full)
{
	if (n < 0) {
		*flags |= err;
		n = 0;
	}
	n /= 8;
	if (n > MAX_DEPTH)
		n = MAX_DEPTH;
	if (n == MAX_DEPTH)
		*flags |= full;
	return n;
}

/* copy_user copies up to want bytes of user memory from addr into b->data
 * at pos, to end (ustack_end: the end of the live stack on the main
 * thread). */
static __always_inline __u32 copy_user(struct sample_buf *b, __u32 pos, __u64 addr, __u32 want,
				       __u64 end)
{
	return ustack_copy(b->data, IPS_BYTES + MAX_STACK, MAX_STACK, pos, addr, want, end);
}

/* copy_whole says whether a copy of got bytes from addr holds the whole
 * stack: it reached end (ustack_end) or memory that cannot be read (the
 * stack mapping's end), rather than a limit of the copy. */
static __always_inline int copy_whole(__u64 addr, __u32 got, __u64 end)
{
	__u8 next;

	if (got == 0)
		return 0;
	if (addr + got >= end)
		return 1;
	return bpf_probe_read_user(&next, 1, (void *)(addr + got)) != 0;
}

/* copy_stacks copies up to stack_bytes of the user stack from sp into
 * b->data at pos, and says whether the copy holds the whole stack. In a Go
 * program's cgo or vDSO call (sample_go.h) the copy is cut at the system
 * stack's top and up to stack_bytes of the goroutine's stack follow, as far
 * as the buffer holds. (Both copies are asked for the
 * constant stack_bytes: a length the verifier cannot bound to one value
 * made it walk 70 times more instructions, and loading took a second.) */
static __always_inline int copy_stacks(struct sample_buf *b, __u32 tgid, __u64 sp, __u64 r12,
				       __u32 pos, __u32 *flags)
{
	__u32 got, n;
	__u64 end = ustack_end(sp, MAX_STACK);
	struct go_cgo c = {};

	got = copy_user(b, pos, sp, stack_bytes, end);
	b->hdr.stack_len = got;
	if (!go_cgo_call(tgid, sp, got, r12, &c))
		return copy_whole(sp, got, end);
	n = c.frame - sp;
	if (n > got || n > MAX_STACK)
		return copy_whole(sp, got, end);
	b->hdr.stack_len = n;
	b->hdr.go_len = copy_user(b, pos + n, c.sp, stack_bytes, ustack_end(c.sp, MAX_STACK));
	b->hdr.go_frame = c.frame;
	b->hdr.go_sp = c.sp;
	*flags |= FLAG_GO_CGO;
	/* A goroutine stack's copy runs on into the heap around it: never
	 * whole, so that frame pointers continue it. */
	return 0;
}

/* user_walk is the kernel's frame-pointer walk of the user stack, after
 * the copies in b->data, and its length in addresses. With a copy that holds
 * the whole stack (whole) it is skipped: user space unwinds the copy, and
 * the walk (about 2 us a sample through frameless code, more than the copy)
 * would only continue a copy cut by its limit. It runs without a copy
 * (frame pointers only, no user registers, an unreadable stack pointer) and
 * after a cut one. */
static __always_inline long user_walk(void *ctx, struct sample_buf *b, long kn, int whole,
				      __u32 *flags)
{
	__u64 pos;

	if (whole)
		return 0;
	pos = kn * 8 + b->hdr.stack_len + b->hdr.go_len;
	/* The empty asm keeps the checked copy of pos the one used. */
	asm volatile("" : "+r"(pos));
	if (pos > IPS_BYTES + MAX_STACK - MAX_DEPTH * 8)
		return 0;
	return stack_frames(bpf_get_stack(ctx, &b->data[pos], MAX_DEPTH * 8, BPF_F_USER_STACK),
			    flags, FLAG_USER_ERR, FLAG_USER_FULL);
}

/* python_stack appends the Python stack of a Python process's thread
 * (python.h) after the n addresses and the stack copies in b->data,
 * counting the samples walked and why stacks are missing or cut. */
static __always_inline void python_stack(struct sample_buf *b, __u32 tgid, __u32 tid, long n,
					 __u32 *flags)
{
	__u64 pos = n * 8 + b->hdr.stack_len + b->hdr.go_len;
	int walked = 0;
	__u16 err = 0;

	b->hdr.py_len = py_stack(tgid, tid, b->data, pos, IPS_BYTES + MAX_STACK, &walked, &err);
	if (!walked)
		return;
	*flags |= FLAG_PY;
	b->hdr.py_err = err;
	bump(STAT_PY);
	if (err >= PY_ERR_NO_THREAD && err <= PY_ERR_DEEP)
		bump(STAT_PY + err);
}

SEC("perf_event")
int sample_cpu(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 zero = 0;
	__u64 wake = BPF_RB_NO_WAKEUP;
	struct sample_buf *b;
	long kn, un;
	__u32 flags = 0;
	__u64 size;

	if (!keep_sample(tgid))
		return 0;

	b = bpf_map_lookup_elem(&scratch, &zero);
	if (!b)
		return 0;

	kn = stack_frames(bpf_get_stack(ctx, &b->data[0], MAX_DEPTH * 8, 0), &flags, FLAG_KERN_ERR,
			  FLAG_KERN_FULL);

	b->hdr.kind = REC_SAMPLE;
	b->hdr.pid = tgid;
	b->hdr.tid = (__u32)id;
	b->hdr.cpu = bpf_get_smp_processor_id();
	b->hdr.time_ns = bpf_ktime_get_ns();
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
	{
		/* The user registers: the sample's own when it hit user mode,
		 * else the task's saved user registers (at kernel entry). */
		struct sample_pt_regs *uregs = 0;
		__u64 sp = 0, r12 = 0;
		int whole = 0;
		if ((((struct bpf_perf_event_data *)ctx)->regs.cs & 3) == 3) {
			uregs = &((struct bpf_perf_event_data *)ctx)->regs;
			b->hdr.user_ip = uregs->ip;
			b->hdr.user_sp = uregs->sp;
			b->hdr.user_bp = uregs->bp;
			r12 = uregs->r12;
			flags |= FLAG_REGS;
		} else {
			uregs = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());
			if (uregs && bpf_probe_read_kernel(&b->hdr.user_ip, 8, &uregs->ip) == 0 &&
			    bpf_probe_read_kernel(&b->hdr.user_sp, 8, &uregs->sp) == 0 &&
			    bpf_probe_read_kernel(&b->hdr.user_bp, 8, &uregs->bp) == 0 &&
			    b->hdr.user_sp != 0) {
				flags |= FLAG_REGS;
				bpf_probe_read_kernel(&r12, 8, &uregs->r12);
			}
		}
		sp = b->hdr.user_sp;
		if ((flags & FLAG_REGS) && stack_bytes > 0 && sp)
			whole = copy_stacks(b, tgid, sp, r12, kn * 8, &flags);
		un = user_walk(ctx, b, kn, whole, &flags);
		b->hdr.user_len = un;
		if (un > 0 && sp &&
		    bpf_probe_read_user(&b->hdr.sp_word, sizeof(b->hdr.sp_word), (void *)sp) == 0)
			flags |= FLAG_SP_WORD;
	}
	python_stack(b, tgid, (__u32)id, kn + un, &flags);
	b->hdr.flags = flags;

	if (!bpf_map_lookup_elem(&seen, &tgid)) {
		/* First sample of this process: wake the reader to read its maps
		 * now. (Look up first: an LRU update allocates even when the key
		 * exists.) */
		bpf_map_update_elem(&seen, &tgid, &zero, BPF_ANY);
		wake = BPF_RB_FORCE_WAKEUP;
	} else if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > wake_bytes)
		wake = BPF_RB_FORCE_WAKEUP;

	size = sizeof(struct sample_hdr) + (kn + un) * 8 + b->hdr.stack_len + b->hdr.go_len +
	       b->hdr.py_len * sizeof(struct py_frame);
	if (size > sizeof(struct sample_buf))
		size = sizeof(struct sample_buf);
	if (bpf_ringbuf_output(&samples, b, size, wake) < 0)
		bump(STAT_DROPPED);
	return 0;
}

/* tracepoint/sched/sched_process_fork, from its format file. */
struct fork_args {
	__u64 common;
	__u32 parent_comm;
	__s32 parent_pid;
	__u32 child_comm;
	__s32 child_pid;
};

/* Follow children: a process forked by a target becomes a target (every
 * process is one with filter_all). User space is told (REC_FORK), so that a
 * child that exits before its own memory map is read is known by its
 * parent's: same executable, same mappings until it execs. A new thread is
 * told too (its ID is not a process's; user space ignores it). */
SEC("tracepoint/sched/sched_process_fork")
int follow_fork(struct fork_args *args)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u32 child = args->child_pid;
	__u8 one = 1;
	struct sample_hdr h = {};

	if (child == tgid)
		return 0;
	if (!filter_all) {
		if (!bpf_map_lookup_elem(&targets, &tgid))
			return 0;
		bpf_map_update_elem(&targets, &child, &one, BPF_NOEXIST);
	}
	h.kind = REC_FORK;
	h.pid = child;
	h.tid = tgid;
	h.cpu = bpf_get_smp_processor_id();
	h.time_ns = bpf_ktime_get_ns();
	if (bpf_ringbuf_output(&samples, &h, sizeof(h), 0) < 0)
		bump(STAT_DROPPED);
	return 0;
}

/* tracepoint/sched/sched_process_exec, from its format file. */
struct exec_args {
	__u64 common;
	__u32 filename;
	__s32 pid;
	__s32 old_pid;
};

/* Tell user space that a target replaced its memory map. */
SEC("tracepoint/sched/sched_process_exec")
int note_exec(struct exec_args *args)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct sample_hdr h = {};

	if (!is_target(tgid))
		return 0;
	h.kind = REC_EXEC;
	h.pid = tgid;
	h.tid = (__u32)bpf_get_current_pid_tgid();
	h.cpu = bpf_get_smp_processor_id();
	h.time_ns = bpf_ktime_get_ns();
	/* The new program's first sample wakes the reader again, so that its
	 * maps are read at once (a command started through sh or unshare). */
	bpf_map_delete_elem(&seen, &tgid);
	if (bpf_ringbuf_output(&samples, &h, sizeof(h), BPF_RB_FORCE_WAKEUP) < 0)
		bump(STAT_DROPPED);
	return 0;
}

/* Entry-only uprobe: one more call of counted function #cookie. */
SEC("uprobe")
int count_calls(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (is_target(tgid))
		inc(&calls, bpf_get_attach_cookie(ctx));
	return 0;
}
