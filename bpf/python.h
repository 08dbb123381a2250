/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/* CPython's stack, for sample.bpf.c: the code object and instruction of
 * every frame of the sampled thread, copied at sample time; user space
 * (internal/python) reads the names, files and line tables.
 *
 * User space puts a Python process's layout in py_procs when it first sees
 * it (the offsets come from internal/python's version table, 3.8-3.13):
 * the address of _PyRuntime.interpreters.head and the offsets the walk
 * reads. The sampled thread's PyThreadState is found by its thread_id,
 * which CPython sets to pthread_self(): on x86-64 glibc the thread pointer,
 * the task's fsbase. The walk goes down the main interpreter's list of
 * thread states (at most PY_MAX_THREADS) to the one whose thread_id is the
 * sampled task's fsbase, and remembers it per thread (py_threads, checked
 * again at every use). This is right for every thread, holding the GIL or
 * not, in every version: _PyRuntime.gilstate.tstate_current names only the
 * GIL's holder, and the thread-local current state (_Py_tss_tstate in
 * 3.12+, the autoTSSkey pthread key before) would need glibc's layout of
 * its key table or the dynamic TLS of libpython.
 *
 * From the thread state the frame chain: PyThreadState.frame (3.8-3.10,
 * PyFrameObject: f_back, f_code, f_lasti), .cframe->current_frame (3.11,
 * 3.12) or .current_frame (3.13) (_PyInterpreterFrame: previous,
 * f_code/f_executable, prev_instr/instr_ptr, and is_entry (3.11) or owner
 * (3.12+), which say where one call of the eval loop starts). Each frame is
 * one struct py_frame: the code object's address, the instruction word
 * (low 56 bits) with the is_entry/owner byte in the top 8, and a stamp of
 * the code object (two of its pointers), so that user space, which reads
 * each code object once, knows a code object freed and another allocated
 * at its address (module code objects are freed after the import).
 *
 * Included after sample_go.h, whose struct task_struct (the thread's
 * fsbase, relocated by CO-RE) it reads.
 */
#ifndef TICKPROF_PYTHON_H
#define TICKPROF_PYTHON_H

#define PY_MAX_FRAMES 64
#define PY_MAX_THREADS 64
#define PY_BYTES (PY_MAX_FRAMES * 24)

/* Why a Python process's sample has no or only part of its Python stack. */
#define PY_ERR_NO_THREAD 1 /* no thread state is the sampled thread's */
#define PY_ERR_READ 2      /* a read of the interpreter's memory failed */
#define PY_ERR_DEEP 3      /* more than PY_MAX_FRAMES frames: cut */

/* One Python process: where its interpreter is and the offsets the walk
 * reads (Layout in internal/python; cframe_current -1: the version has no
 * _PyCFrame; frame_owner is a byte, read as the low byte of a word, and
 * any field of the frame where the version has none). */
struct py_proc {
	__u64 head; /* address of _PyRuntime.interpreters.head */
	__s16 threads_head;
	__s16 thread_next;
	__s16 thread_id;
	__s16 thread_frame;
	__s16 cframe_current;
	__s16 frame_previous;
	__s16 frame_code;
	__s16 frame_instr;
	__s16 frame_owner;
	__s16 code_name;  /* co_qualname (3.11+) or co_name */
	__s16 code_table; /* co_linetable or co_lnotab */
	__s16 pad;
};

/* One frame: the code object, the instruction word, and the code object's
 * stamp, its name's address xor its line table's (rotated), which tells a
 * code object from a later one at the same address. */
struct py_frame {
	__u64 code;
	__u64 instr;
	__u64 stamp;
};

struct py_buf {
	struct py_frame f[PY_MAX_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct py_proc);
} py_procs SEC(".maps");

/* The thread state last found for a thread (by thread ID). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} py_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_buf);
} py_scratch SEC(".maps");

/* py_read reads the word at addr into *v; nonzero when it cannot. */
static __always_inline int py_read(__u64 addr, __u64 *v)
{
	*v = 0;
	return bpf_probe_read_user(v, sizeof(*v), (void *)addr);
}

/* py_thread finds the thread state of the thread tid whose thread pointer
 * is fsbase; 0 with *err set when it cannot. (The loops' bodies keep few
 * branches: the verifier walks every iteration.) */
static __always_inline __u64 py_thread(struct py_proc *p, __u32 tid, __u64 fsbase, __u16 *err)
{
	__u64 *cached = bpf_map_lookup_elem(&py_threads, &tid);
	__u64 ts, id, interp;
	int i;

	if (cached && *cached && py_read(*cached + p->thread_id, &id) == 0 && id == fsbase)
		return *cached;
	if (py_read(p->head, &interp) || py_read(interp + p->threads_head, &ts)) {
		*err = PY_ERR_READ;
		return 0;
	}
	for (i = 0; i < PY_MAX_THREADS; i++) {
		if (!ts || py_read(ts + p->thread_id, &id))
			break;
		if (id == fsbase) {
			bpf_map_update_elem(&py_threads, &tid, &ts, BPF_ANY);
			return ts;
		}
		py_read(ts + p->thread_next, &ts);
	}
	*err = PY_ERR_NO_THREAD;
	return 0;
}

/* py_frames copies the frame chain of thread state ts into out and
 * returns the number of frames, setting *err when it ends early. Every
 * read is made whatever the one before gave (a failed one reads 0), and
 * the frame's reads are checked once. */
static __always_inline __u32 py_frames(struct py_proc *p, __u64 ts, struct py_frame *out,
				       __u16 *err)
{
	__u64 f, code, instr, name, table, owner;
	long r;
	int i;

	if (py_read(ts + p->thread_frame, &f)) {
		*err = PY_ERR_READ;
		return 0;
	}
	if (p->cframe_current >= 0 && f && py_read(f + p->cframe_current, &f)) {
		*err = PY_ERR_READ;
		return 0;
	}
	for (i = 0; i < PY_MAX_FRAMES; i++) {
		if (!f)
			return i;
		r = py_read(f + p->frame_code, &code);
		r |= py_read(f + p->frame_instr, &instr);
		r |= py_read(f + p->frame_owner, &owner);
		/* The stamp; the entry frames of 3.12+ hold no code object,
		 * and their reads give 0. */
		py_read(code + p->code_name, &name);
		py_read(code + p->code_table, &table);
		out[i].code = code;
		out[i].instr = (instr & 0x00ffffffffffffffULL) | (owner << 56);
		out[i].stamp = name ^ (table << 16 | table >> 48);
		r |= py_read(f + p->frame_previous, &f);
		if (r) {
			*err = PY_ERR_READ;
			return i + 1;
		}
	}
	if (f)
		*err = PY_ERR_DEEP;
	return PY_MAX_FRAMES;
}

/* py_walk copies the Python stack of the current thread (tid) of process
 * tgid into py_scratch: -1 when the process is not a Python one, else the
 * frame count with the PY_ERR_* reason shifted left by 16. It is a global
 * function, so that the verifier checks it once, not once for each state
 * the sampling program reaches it in. */
__attribute__((noinline)) int py_walk(__u32 tgid, __u32 tid)
{
	struct py_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	struct task_struct *task;
	struct py_buf *pb;
	__u32 zero = 0, n;
	__u16 err = 0;
	__u64 ts;

	if (!p)
		return -1;
	pb = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!pb)
		return PY_ERR_READ << 16;
	task = bpf_get_current_task_btf();
	ts = py_thread(p, tid, task->thread.fsbase, &err);
	if (!ts)
		return err << 16;
	n = py_frames(p, ts, pb->f, &err);
	return n | err << 16;
}

/* py_stack copies the Python stack of the current thread of process tgid
 * (py_walk) into buf at pos (buf holds at least pos + PY_BYTES bytes when
 * pos is at most max) and returns its frame count; *walked says the
 * process is a Python one, *err why its stack is missing or cut. */
static __always_inline __u32 py_stack(__u32 tgid, __u32 tid, __u8 *buf, __u64 pos, __u64 max,
				      int *walked, __u16 *err)
{
	struct py_buf *pb;
	__u32 zero = 0;
	__u64 sz;
	int r = py_walk(tgid, tid);

	if (r < 0)
		return 0;
	*walked = 1;
	*err = r >> 16;
	sz = (r & 0xffff) * sizeof(struct py_frame);
	asm volatile("" : "+r"(sz));
	pb = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!pb || sz == 0 || sz > PY_BYTES || pos > max)
		return 0;
	if (bpf_probe_read_kernel(&buf[pos], sz, pb) != 0) {
		*err = PY_ERR_READ;
		return 0;
	}
	return sz / sizeof(struct py_frame);
}

#endif /* TICKPROF_PYTHON_H */
