// SPDX-License-Identifier: Apache-2.0

// Package bpftest decides whether a test that needs root and BPF can run.
//
// Such a test calls Require first. Where BPF is unavailable (not root, no
// BPF syscall, no BTF) the test is skipped with the reason, unless the
// environment sets TICKPROF_REQUIRE_BPF=1, as CI does: then it fails, so a
// machine that silently lost BPF cannot turn the suite green.
//
// Only tests import bpftest, and of third-party modules it imports only
// cilium/ebpf (both checked by internal/layers).
package bpftest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
)

// EnvRequire is the environment variable that turns skips into failures.
const EnvRequire = "TICKPROF_REQUIRE_BPF"

// Require skips t (or fails it under TICKPROF_REQUIRE_BPF=1) unless the
// process is root and can load a BPF program of the kprobe type. It raises
// the memlock limit on the way (Available), so a test need not.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("BPF required (%s=1) but unavailable: %v", EnvRequire, err)
		}
		t.Skipf("skipping: BPF unavailable: %v (set %s=1 to make this a failure)", err, EnvRequire)
	}
}

// Available reports why BPF tests cannot run here, or nil when they can.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("no kernel BTF: %w", err)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raise memlock rlimit: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.Kprobe,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		return fmt.Errorf("load a trivial kprobe-type program: %w", err)
	}
	prog.Close()
	return nil
}

// Ring wake-up flags of bpf_ringbuf_output, for RingWriter.
const (
	RingNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	RingForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
)

// RingBuffer creates a ring buffer map of 64 KiB, closed when the test
// ends.
func RingBuffer(t testing.TB) *ebpf.Map {
	t.Helper()
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 16})
	if err != nil {
		t.Fatalf("ring buffer map: %v", err)
	}
	t.Cleanup(func() { ring.Close() })
	return ring
}

// RingWriter loads a socket filter that writes one 8-byte record to the
// ring buffer map ring, with the wake-up flags given, each time it runs
// (ebpf.Program.Run); the program is closed when the test ends.
func RingWriter(t testing.TB, ring *ebpf.Map, flags int32) *ebpf.Program {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SocketFilter,
		License: "Apache-2.0",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R1, 0x7469636b),
			asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
			asm.LoadMapPtr(asm.R1, ring.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -8),
			asm.Mov.Imm(asm.R3, 8),
			asm.Mov.Imm(asm.R4, flags),
			asm.FnRingbufOutput.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load ring writer: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// RunOnce runs prog once on an empty packet, failing t on error.
func RunOnce(t testing.TB, prog *ebpf.Program) {
	t.Helper()
	if _, err := prog.Run(&ebpf.RunOptions{Data: make([]byte, 14)}); err != nil {
		t.Fatalf("run %v: %v", prog, err)
	}
}
