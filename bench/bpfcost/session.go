// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/loader"
)

// attachTraceUprobeSession is BPF_TRACE_UPROBE_SESSION (include/uapi/linux/
// bpf.h, 6.13+); cilium/ebpf v0.22 loads uprobe.session programs but links
// only uprobe_multi, so the link is created here with BPF_LINK_CREATE.
const attachTraceUprobeSession = 57

// linkCreateUprobeMulti is bpf_attr's link_create member for uprobe_multi
// links.
type linkCreateUprobeMulti struct {
	progFD, targetFD, attachType, flags uint32
	path, offsets, refCtrOffsets        uint64
	cookies                             uint64
	count, multiFlags, pid              uint32
	_                                   uint32
}

// sessionLink attaches prog as a uprobe session at file offset off of path,
// for process pid, with cookie 0.
func sessionLink(path string, off uint64, pid int, prog *ebpf.Program) (func(), error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	offs := []uint64{off}
	cookies := []uint64{0}
	attr := linkCreateUprobeMulti{
		progFD: uint32(prog.FD()), attachType: attachTraceUprobeSession,
		path: uint64(uintptr(unsafe.Pointer(p))), offsets: uint64(uintptr(unsafe.Pointer(&offs[0]))),
		cookies: uint64(uintptr(unsafe.Pointer(&cookies[0]))), count: 1, pid: uint32(pid),
	}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, 28 /* BPF_LINK_CREATE */, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(p)
	runtime.KeepAlive(offs)
	runtime.KeepAlive(cookies)
	if errno != 0 {
		return nil, fmt.Errorf("uprobe session link: %w", errno)
	}
	return func() { unix.Close(int(fd)) }, nil
}

// session attaches cost_s as a uprobe session on bench_fn.
func session(pid int, bin string, objs *CostObjects) ([]*ebpf.Program, func(), error) {
	specs, err := loader.ResolveUser(pid, "bench_fn", 1)
	if err != nil {
		return nil, nil, err
	}
	done, err := sessionLink(bin, specs[0].Offset, pid, objs.CostS)
	if err != nil {
		return nil, nil, err
	}
	return []*ebpf.Program{objs.CostS}, done, nil
}
