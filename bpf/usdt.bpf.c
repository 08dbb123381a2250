//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * usdt.bpf.c - entry and return programs for USDT probe pairs (-u
 * 'usdt:...' and 'py:...').
 *
 * A pair is two uprobes on the nops of two probes (an entry probe and a
 * return probe: python:function__entry and function__return,
 * postgresql:query__start and query__done), attached with the target's
 * index as the BPF cookie. The entry pushes the clock readings on the
 * thread's stack in task storage (timing.h's tp_task_enter_frame, tagged
 * with the stack pointer so that the echo finds it), the return pops them
 * and accounts the call (tp_task_exit_at): the clocks, counters, windows,
 * echoes and records are those of every other target kind. Pairs nest: a
 * recursive function's entries stack and each return pops the latest.
 *
 * A target may filter its calls by two string arguments of its probes
 * (CPython's function name and file name), read as the argument
 * specifications of the probes' notes say (internal/usdt). A call whose
 * name differs is not the target's: its entry pushes nothing and its
 * return pops nothing. The return reads the clock before it filters, the
 * entry after, so that the filter's own cost stays outside the timed call.
 */
#include "timing.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define UT_ARG_CONST 0
#define UT_ARG_REG 1
#define UT_ARG_MEM 2

#define UT_NAME_LEN 64
#define UT_FILE_LEN 128
#define UT_PATH_LEN 256

#define UT_FILTER_NAME 1
#define UT_FILTER_FILE 2

/* Where one argument lies when the probe's nop runs (a USDT argument
 * specification, parsed by internal/usdt). */
struct ut_arg {
	__u32 kind;    /* UT_ARG_* */
	__u32 size;    /* bytes: 1, 2, 4 or 8 */
	__u32 reg_off; /* the register's offset in struct pt_regs */
	__u32 pad;
	__s64 value; /* the constant, or the memory offset from the register */
};

/* One target's filter: value of ut_targets[target]. side 0 is the entry
 * probe's arguments, side 1 the return probe's. name is compared whole
 * (zero-padded); file is a suffix of the file name argument that follows a
 * '/' or starts it. */
struct ut_target {
	__u32 filter; /* UT_FILTER_* */
	__u32 file_len;
	struct ut_arg name_arg[2];
	struct ut_arg file_arg[2];
	char name[UT_NAME_LEN];
	char file[UT_FILE_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader: the target count */
	__type(key, __u32);
	__type(value, struct ut_target);
} ut_targets SEC(".maps");

/* Scratch space for the strings read (too large for the stack). */
struct ut_scratch {
	char name[UT_NAME_LEN];
	char path[UT_PATH_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ut_scratch);
} ut_scratch SEC(".maps");

/* Puts struct ut_target in BTF so bpf2go generates its Go type. */
const struct ut_target *ut_unused_target __attribute__((unused));

/* ut_arg_value reads argument a of the probe whose registers are ctx. */
static __always_inline int ut_arg_value(struct pt_regs *ctx, const struct ut_arg *a, __u64 *v)
{
	__u64 r = 0;

	if (a->kind == UT_ARG_CONST) {
		*v = (__u64)a->value;
		return 0;
	}
	if (a->reg_off > sizeof(struct pt_regs) - 8)
		return -1;
	if (bpf_probe_read_kernel(&r, sizeof(r), (void *)ctx + a->reg_off))
		return -1;
	if (a->kind == UT_ARG_MEM) {
		__u64 addr = r + a->value;

		r = 0;
		switch (a->size) {
		case 1:
			if (bpf_probe_read_user(&r, 1, (void *)addr))
				return -1;
			break;
		case 2:
			if (bpf_probe_read_user(&r, 2, (void *)addr))
				return -1;
			break;
		case 4:
			if (bpf_probe_read_user(&r, 4, (void *)addr))
				return -1;
			break;
		default:
			if (bpf_probe_read_user(&r, 8, (void *)addr))
				return -1;
		}
	}
	if (a->size < 8)
		r &= (1ULL << (8 * a->size)) - 1;
	*v = r;
	return 0;
}

/* ut_name_matches reports whether the string at user address p is name
 * (both zero-padded to UT_NAME_LEN). */
static __always_inline int ut_name_matches(struct ut_scratch *s, const struct ut_target *t, __u64 p)
{
	__u64 *a = (__u64 *)s->name;
	const __u64 *b = (const __u64 *)t->name;

	__builtin_memset(s->name, 0, sizeof(s->name));
	if (bpf_probe_read_user_str(s->name, sizeof(s->name), (void *)p) <= 0)
		return 0;
#pragma unroll
	for (int i = 0; i < UT_NAME_LEN / 8; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* ut_file_matches reports whether the string at user address p ends with
 * the target's file suffix, at its start or after a '/'. */
static __always_inline int ut_file_matches(struct ut_scratch *s, const struct ut_target *t, __u64 p)
{
	long n = bpf_probe_read_user_str(s->path, sizeof(s->path), (void *)p);
	__u32 len = t->file_len, start;

	if (n <= 0 || len == 0 || len >= UT_FILE_LEN || (__u32)(n - 1) < len)
		return 0;
	start = (__u32)(n - 1) - len;
	if (start > 0 && s->path[(start - 1) & (UT_PATH_LEN - 1)] != '/')
		return 0;
	for (__u32 i = 0; i < UT_FILE_LEN; i++) {
		if (i >= len)
			break;
		if (s->path[(start + i) & (UT_PATH_LEN - 1)] != t->file[i])
			return 0;
	}
	return 1;
}

/* ut_match reports whether the call at probe side (0 entry, 1 return) of
 * target passes its filter. */
static __always_inline int ut_match(struct pt_regs *ctx, __u32 target, int side)
{
	struct ut_target *t = bpf_map_lookup_elem(&ut_targets, &target);
	struct ut_scratch *s;
	__u32 zero = 0;
	__u64 p;

	if (!t)
		return 0;
	if (t->filter == 0)
		return 1;
	s = bpf_map_lookup_elem(&ut_scratch, &zero);
	if (!s)
		return 0;
	side &= 1;
	if (t->filter & UT_FILTER_NAME) {
		if (ut_arg_value(ctx, &t->name_arg[side], &p) || !ut_name_matches(s, t, p))
			return 0;
	}
	if (t->filter & UT_FILTER_FILE) {
		if (ut_arg_value(ctx, &t->file_arg[side], &p) || !ut_file_matches(s, t, p))
			return 0;
	}
	return 1;
}

SEC("uprobe")
int tp_usdt_entry(struct pt_regs *ctx)
{
	__u32 target = (__u32)bpf_get_attach_cookie(ctx);

	if (!ut_match(ctx, target, 0))
		return 0;
	/* Tagged with the stack pointer (8-aligned in compiled code), as the
	 * echo (tp_echo_hit) looks for it. */
	return tp_task_enter_frame(target, ctx->sp & ~TP_FRAME_TAGS);
}

SEC("uprobe")
int tp_usdt_return(struct pt_regs *ctx)
{
	__u64 ns = 0, tick;
	__u32 target;

	/* Read the clock first, as close to the timed code as possible. */
	if (tp_need_ns())
		ns = bpf_ktime_get_ns();
	tick = tp_now_tick(ns);
	target = (__u32)bpf_get_attach_cookie(ctx);
	if (!ut_match(ctx, target, 1))
		return 0;
	return tp_task_exit_at(ctx, target, BPF_F_USER_STACK, tick, ns);
}

/* The echo of an entry probe (echo.h), on the instruction after its nop:
 * calls the filter passes only. */
SEC("uprobe")
int tp_usdt_echo(struct pt_regs *ctx)
{
	if (!ut_match(ctx, (__u32)bpf_get_attach_cookie(ctx), 0))
		return 0;
	return tp_echo_hit(ctx);
}

/*
 * The eval-loop route of CPython 3.12 and later (internal/loader/pyeval.go):
 * an uprobe on _PyEval_EvalFrameDefault's entry and a uretprobe, entered
 * afresh by every call between Python functions while the interpreter's
 * perf trampolines are on. The filter reads the frame's code object (the
 * second argument's first field) and its co_name and co_filename, compact
 * ASCII strings, at the offsets the loader read from the interpreter's
 * DWARF (ut_pyeval). The return closes the call whose entry is on top of
 * the thread's stack with this frame's stack pointer; the returns of the
 * other Python calls find none and are not counted.
 */
struct ut_pylayout {
	__u64 frame_code; /* the code object in _PyInterpreterFrame */
	__u64 code_name;  /* co_name in PyCodeObject */
	__u64 code_file;  /* co_filename */
	__u64 str_state;  /* PyASCIIObject's state bit field */
	__u64 str_data;   /* a compact ASCII string's characters */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader: the target count */
	__type(key, __u32);
	__type(value, struct ut_pylayout);
} ut_pyeval SEC(".maps");

/* Puts struct ut_pylayout in BTF so bpf2go generates its Go type. */
const struct ut_pylayout *ut_unused_pylayout __attribute__((unused));

/* The state bits of a compact ASCII string (3.12+: interned:2, kind:3,
 * compact:1, ascii:1). */
#define UT_STR_COMPACT_ASCII 0x60

/* ut_py_str finds the characters of the string at code + off. */
static __always_inline int ut_py_str(const struct ut_pylayout *l, __u64 code, __u64 off,
				     __u64 *data)
{
	__u64 s = 0;
	__u32 state = 0;

	if (bpf_probe_read_user(&s, sizeof(s), (void *)(code + off)) || !s)
		return -1;
	if (bpf_probe_read_user(&state, sizeof(state), (void *)(s + l->str_state)))
		return -1;
	if ((state & UT_STR_COMPACT_ASCII) != UT_STR_COMPACT_ASCII)
		return -1;
	*data = s + l->str_data;
	return 0;
}

/* ut_pyeval_match reports whether the frame being evaluated (ctx at
 * _PyEval_EvalFrameDefault's entry) runs target's function. */
static __always_inline int ut_pyeval_match(struct pt_regs *ctx, __u32 target)
{
	struct ut_target *t = bpf_map_lookup_elem(&ut_targets, &target);
	struct ut_pylayout *l = bpf_map_lookup_elem(&ut_pyeval, &target);
	struct ut_scratch *s;
	__u32 zero = 0;
	__u64 code = 0, p;

	if (!t || !l)
		return 0;
	s = bpf_map_lookup_elem(&ut_scratch, &zero);
	if (!s)
		return 0;
	if (bpf_probe_read_user(&code, sizeof(code), (void *)(ctx->si + l->frame_code)) || !code)
		return 0;
	if (t->filter & UT_FILTER_NAME) {
		if (ut_py_str(l, code, l->code_name, &p) || !ut_name_matches(s, t, p))
			return 0;
	}
	if (t->filter & UT_FILTER_FILE) {
		if (ut_py_str(l, code, l->code_file, &p) || !ut_file_matches(s, t, p))
			return 0;
	}
	return 1;
}

SEC("uprobe")
int tp_pyeval_entry(struct pt_regs *ctx)
{
	__u32 target = (__u32)bpf_get_attach_cookie(ctx);

	if (!ut_pyeval_match(ctx, target))
		return 0;
	return tp_task_enter_frame(target, ctx->sp);
}

SEC("uretprobe")
int tp_pyeval_exit(struct pt_regs *ctx)
{
	__u64 ns = 0, tick, key = ctx->sp - 8;
	struct tp_tstack *st;
	__u32 target, slot;

	/* Read the clock first, as close to the timed code as possible. */
	if (tp_need_ns())
		ns = bpf_ktime_get_ns();
	tick = tp_now_tick(ns);
	target = (__u32)bpf_get_attach_cookie(ctx);
	st = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0, 0);
	if (!st || st->depth == st->floor)
		return 0;
	slot = (st->depth - 1) & (TP_MAX_DEPTH - 1);
	if (st->target[slot] != target || (st->frame[slot] & ~TP_FRAME_TAGS) != key)
		return 0; /* another Python call's return */
	return tp_task_exit_at(ctx, target, BPF_F_USER_STACK, tick, ns);
}

/* The echo of the eval loop's entry probe: calls of the target only. */
SEC("uprobe")
int tp_pyeval_echo(struct pt_regs *ctx)
{
	if (!ut_pyeval_match(ctx, (__u32)bpf_get_attach_cookie(ctx)))
		return 0;
	return tp_echo_hit(ctx);
}
