/* Minimal kernel types and UAPI constants for the sampling programs, so that
 * sample.bpf.c needs neither vmlinux.h nor the host's asm headers. */
#ifndef TICKPROF_SAMPLE_TYPES_H
#define TICKPROF_SAMPLE_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

enum bpf_map_type_subset {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
};

#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_F_USER_STACK (1ULL << 8)
#define BPF_RB_NO_WAKEUP (1ULL << 0)
#define BPF_RB_FORCE_WAKEUP (1ULL << 1)
#define BPF_RB_AVAIL_DATA 0

/* x86-64 struct pt_regs (UAPI layout) and the perf_event program context. */
struct sample_pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

struct bpf_perf_event_data {
	struct sample_pt_regs regs;
	__u64 sample_period;
	__u64 addr;
};

#endif
