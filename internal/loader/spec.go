// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is the kind of a timing target: how its entry and exit are probed.
type Kind int

// The target kinds.
const (
	// KindUser is a function of a native (C, C++, Rust, ...) user binary,
	// timed with a uprobe at entry and a uretprobe.
	KindUser Kind = iota
	// KindGoUser is a function of a Go executable: it needs RET-site
	// uprobes and goroutine keys (never a uretprobe).
	KindGoUser
	// KindSyscall is a system call's kernel path.
	KindSyscall
	// KindKernelFunc is a kernel function.
	KindKernelFunc
	// KindUSDT is a pair of USDT probes, an entry and a return (usdt.go).
	KindUSDT
)

func (k Kind) String() string {
	switch k {
	case KindUser:
		return "user"
	case KindGoUser:
		return "go"
	case KindSyscall:
		return "syscall"
	case KindKernelFunc:
		return "kernel"
	case KindUSDT:
		return "usdt"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Spec describes one target to time.
type Spec struct {
	// Kind selects the attach method.
	Kind Kind
	// Name is the display name ("libc.so.6:malloc", "read", "vfs_read").
	Name string
	// Binary is the path of the ELF file holding the function, as this
	// process can open it (through /proc/PID/root for a process in a
	// container). User and Go kinds only.
	Binary string
	// File is Binary's path as the target process sees it, for display
	// (Binary may be /proc/PID/exe or /proc/PID/root/...).
	File string
	// Symbol is the function (user kinds, kernel functions) or the system
	// call name (syscalls).
	Symbol string
	// Offset is the file offset of the probe (user kinds), already moved
	// to the first instruction the kernel emulates where that is safe
	// (past endbr64 and register moves: symtab.NativeEntrySite).
	Offset uint64
	// Stepped says why a native function's entry probe stays on an
	// instruction the kernel single-steps ("" when it does not, or when
	// the first instruction is emulated).
	Stepped string
	// Addr is the function's virtual address in Binary (user kinds).
	Addr uint64
	// Size is the function's size in bytes (0 when unknown).
	Size uint64
	// Arg is the extra argument a kind needs (a syscall number, ...).
	Arg uint64
	// USDT is the probe pair of a KindUSDT target (Offset is its entry
	// probe's, Arg its return probe's file offset).
	USDT *USDTPair
	// Glob is the pattern the target was found by ("" for a function
	// named by itself): a function of a glob that cannot be probed is
	// skipped with a warning, one named by itself fails the run.
	Glob string
}

// ClockKind is the clock the timing programs read.
type ClockKind uint32

// The clocks (values match TP_CLOCK_* in bpf/timing.h).
const (
	ClockJiffies ClockKind = 0 // bpf_jiffies64, d = measured jiffy period
	ClockTick    ClockKind = 1 // monotonic ns quantized to a chosen tick
	ClockNS      ClockKind = 2 // exact monotonic ns, d = 1 ns
)

// Clock is a tick clock and its resolution d.
type Clock struct {
	// Kind is the clock read in BPF.
	Kind ClockKind
	// Tick is the quantum for ClockTick; for ClockJiffies it is the
	// measured jiffy period, filled in by Open when zero; 1 ns for ClockNS.
	Tick time.Duration
}

// ParseClock parses --clock: "jiffies", "tick:DUR" (DUR >= 1us) or "ns".
func ParseClock(s string) (Clock, error) {
	switch {
	case s == "jiffies":
		return Clock{Kind: ClockJiffies}, nil
	case s == "ns":
		return Clock{Kind: ClockNS, Tick: time.Nanosecond}, nil
	case strings.HasPrefix(s, "tick:"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "tick:"))
		if err != nil {
			return Clock{}, fmt.Errorf("clock %q: %w: want tick:DUR with a Go duration from 1us, e.g. tick:1ms", s, err)
		}
		if d < time.Microsecond {
			return Clock{}, fmt.Errorf("clock %q: the tick must be at least 1us (use the ns clock for exact times)", s)
		}
		return Clock{Kind: ClockTick, Tick: d}, nil
	}
	return Clock{}, errors.New("clock " + fmt.Sprintf("%q", s) + ": want jiffies, tick:DUR (e.g. tick:1ms) or ns")
}

// String returns the clock as --clock spells it.
func (c Clock) String() string {
	switch c.Kind {
	case ClockJiffies:
		return "jiffies"
	case ClockTick:
		return "tick:" + c.Tick.String()
	case ClockNS:
		return "ns"
	}
	return fmt.Sprintf("clock(%d)", c.Kind)
}

// Resolution returns d in nanoseconds as a float (the jiffy period can be
// a fraction of a nanosecond off a whole number when measured).
func (c Clock) Resolution() float64 { return float64(c.Tick) }
