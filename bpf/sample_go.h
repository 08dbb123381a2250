/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/* Go's cgo and vDSO calls, for sample.bpf.c: where the goroutine stack is.
 *
 * Go runs C code on the thread's system stack (g0), not on the goroutine's
 * stack: runtime.asmcgocall (runtime/asm_amd64.s) saves, at the bottom of
 * the system stack it switches to (frame = (g0.sched.sp - 16) & ~15), the
 * goroutine at 8(frame) and the goroutine stack's depth g.stack.hi - SP at
 * 0(frame), then calls the C function. A copy of the stack from the sample's
 * stack pointer holds the C frames only; the Go callers are on the goroutine
 * stack. go_cgo_call finds that stack as Go's own traceback would: the thread's
 * g from its TLS (fsbase + the executable's offset of runtime.tlsg, set per
 * process in go_procs by user space), and, when g is the system goroutine of
 * its m (m.g0 == g), the frame asmcgocall left, checked against the
 * goroutine it names (curg.m == m, depth inside curg's stack).
 *
 * Offsets used (unchanged since Go 1.4 and checked by the tests against the
 * current toolchain): g.stack.lo 0, g.stack.hi 8, g.m 48, g.sched.sp 56,
 * m.g0 0.
 */
#ifndef TICKPROF_SAMPLE_GO_H
#define TICKPROF_SAMPLE_GO_H

/* The fields read from the kernel's task, relocated by CO-RE. */
struct thread_struct {
	unsigned long fsbase;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_struct thread;
} __attribute__((preserve_access_index));

#define GO_G_STACK_LO 0
#define GO_G_STACK_HI 8
#define GO_G_M 48
#define GO_G_SCHED_SP 56
#define GO_M_G0 0
#define GO_VDSO_REACH 1024

/* Go processes: tgid -> offset of runtime.tlsg from the thread pointer. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __s64);
} go_procs SEC(".maps");

struct go_cgo {
	__u64 frame; /* the system stack's saved top, above the switching frame */
	__u64 sp;    /* the goroutine's stack pointer at the call */
	__u64 hi;    /* the top of the goroutine's stack */
};

static __always_inline __u64 go_word(__u64 addr)
{
	__u64 v = 0;
	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr) != 0)
		return 0;
	return v;
}

/* go_cgo_call reports whether the thread of a Go process runs on its
 * system stack, at most reach bytes below the system stack's saved top
 * (g0.sched.sp), having switched there from a goroutine's stack, and where
 * that goroutine's stack pointer was: in a cgo call (g is g0), from the
 * frame runtime.asmcgocall left; in a vDSO call (time.now,
 * runtime.nanotime1: g stays the goroutine), from r12, where they keep it
 * ("R12 unchanged by C code"). */
static __always_inline int go_cgo_call(__u32 tgid, __u64 sp, __u64 reach, __u64 r12,
				       struct go_cgo *c)
{
	__s64 *off = bpf_map_lookup_elem(&go_procs, &tgid);
	struct task_struct *task;
	__u64 g, m, g0, top, f, curg, depth, lo, hi;

	if (!off)
		return 0;
	task = bpf_get_current_task_btf();
	g = go_word(task->thread.fsbase + *off);
	if (!g)
		return 0;
	m = go_word(g + GO_G_M);
	g0 = m ? go_word(m + GO_M_G0) : 0;
	if (!g0)
		return 0;
	top = go_word(g0 + GO_G_SCHED_SP);
	if (top < sp || top - sp > reach)
		return 0; /* not near the top of the system stack */
	if (g == g0) {
		f = (top - 16) & ~15ULL;
		curg = go_word(f + 8);
		if (!curg || go_word(curg + GO_G_M) != m)
			return 0;
		depth = go_word(f);
		lo = go_word(curg + GO_G_STACK_LO);
		hi = go_word(curg + GO_G_STACK_HI);
		if (depth == 0 || hi <= lo || depth > hi - lo)
			return 0;
		c->sp = hi - depth;
	} else {
		/* A vDSO call uses a few hundred bytes of stack; and the
		 * sample's stack pointer must lie in g0's stack, so that a
		 * goroutine stack allocated just below it is not taken for
		 * one. */
		if (top - sp > GO_VDSO_REACH || sp < go_word(g0 + GO_G_STACK_LO))
			return 0;
		lo = go_word(g + GO_G_STACK_LO);
		hi = go_word(g + GO_G_STACK_HI);
		if (r12 < lo || r12 >= hi)
			return 0;
		c->sp = r12;
	}
	c->frame = top;
	c->hi = hi;
	return 1;
}

#endif
