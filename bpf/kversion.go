// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// KernelVersionCode is the running kernel's LINUX_VERSION_CODE,
// KERNEL_VERSION(a, b, c) = a<<16 + b<<8 + min(c, 255), from uname's
// release ("6.18.44-fc" -> 6.18.44); 0 when it cannot be read.
//
// cilium/ebpf fills the version of kprobe-type programs (uprobes are of
// that type) by reading the vDSO through /proc/self/mem when it is not
// set. A process started from a file with capabilities (setcap
// cap_bpf,cap_perfmon+ep) is not dumpable, so its /proc/self/mem is
// root's and unreadable, and every load failed. Kernels since 5.0 ignore
// the field; older ones compare it with this code.
func KernelVersionCode() uint32 {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return 0
	}
	return versionCode(unix.ByteSliceToString(u.Release[:]))
}

func versionCode(release string) uint32 {
	var v [3]uint32
	parts := strings.SplitN(release, ".", 3)
	for i, p := range parts {
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		n, err := strconv.ParseUint(p[:end], 10, 32)
		if err != nil {
			break
		}
		v[i] = uint32(n)
	}
	if v[0] == 0 {
		return 0
	}
	return v[0]<<16 + min(v[1], 255)<<8 + min(v[2], 255)
}

// SetKernelVersion sets the kernel version of spec's kprobe-type programs
// that have none (see KernelVersionCode), so that loading them does not
// read /proc/self/mem.
func SetKernelVersion(spec *ebpf.CollectionSpec) {
	kv := KernelVersionCode()
	if kv == 0 {
		return
	}
	for _, p := range spec.Programs {
		if p.Type == ebpf.Kprobe && p.KernelVersion == 0 {
			p.KernelVersion = kv
		}
	}
}
