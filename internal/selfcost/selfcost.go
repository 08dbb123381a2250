// SPDX-License-Identifier: Apache-2.0

// Package selfcost measures what a tickprof run costs the machine, from
// the kernel's own accounting: the process's CPU time (user and system,
// from its start, so start-up counts) and its peak resident memory
// (getrusage), its wall time since it started (/proc/self/stat), and
// the run time of its BPF programs as the kernel's BPF statistics count
// it. The BPF programs run in the context of the tasks they probe, so
// their time is charged to those tasks, not to this process: Cost keeps
// it apart.
package selfcost

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/units"
)

// Cost is a run's own cost up to the moment it was measured.
type Cost struct {
	// User and System are this process's CPU times since it started.
	User   time.Duration `json:"user_ns"`
	System time.Duration `json:"system_ns"`
	// Wall is the time since this process started.
	Wall time.Duration `json:"wall_ns"`
	// PeakRSS is the process's peak resident set in bytes.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// BPF is the run time of the run's BPF programs and BPFRuns their
	// runs, when BPFKnown (the kernel's BPF statistics were on while
	// they ran); the time is spent on the probed tasks' CPUs.
	BPF      time.Duration `json:"bpf_ns,omitempty"`
	BPFRuns  uint64        `json:"bpf_runs,omitempty"`
	BPFKnown bool          `json:"bpf_known"`
}

// CPU is the process's user plus system time.
func (c Cost) CPU() time.Duration { return c.User + c.System }

// Self measures this process's cost now; the BPF fields are left for
// the caller (AddBPF).
func Self() (Cost, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Cost{}, fmt.Errorf("getrusage: %w", err)
	}
	c := Cost{
		User:    time.Duration(ru.Utime.Nano()),
		System:  time.Duration(ru.Stime.Nano()),
		PeakRSS: ru.Maxrss << 10, // KiB on Linux
	}
	wall, err := sinceStart()
	if err != nil {
		return c, err
	}
	c.Wall = wall
	return c, nil
}

// AddBPF adds a program's run time and runs to c and marks them known.
func (c *Cost) AddBPF(run time.Duration, runs uint64) {
	c.BPF += run
	c.BPFRuns += runs
	c.BPFKnown = true
}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ): 100 on
// every Linux architecture tickprof builds for.
const clockTicks = 100

// sinceStart is the time since this process started: the boot-time
// clock now less the process's start time (field 22 of /proc/self/stat,
// in clock ticks since boot).
func sinceStart() (time.Duration, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, fmt.Errorf("read the process start time: %w", err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it are counted from its closing one.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/self/stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	const startField = 22 - 3 // fields 3, 4, ... follow the name
	if len(f) <= startField {
		return 0, fmt.Errorf("parse /proc/self/stat: %d fields", len(f)+2)
	}
	ticks, err := strconv.ParseUint(string(f[startField]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse /proc/self/stat start time: %w", err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("read the boot-time clock: %w", err)
	}
	return time.Duration(ts.Nano()) - time.Duration(ticks)*time.Second/clockTicks, nil
}

// String is the cost in one line: CPU (user + system, and its share of
// a core over the process's life), peak memory, and the BPF programs'
// time when it is known.
func (c Cost) String() string {
	s := fmt.Sprintf("CPU %s (user %s + system %s", units.Ns(float64(c.CPU())), units.Ns(float64(c.User)), units.Ns(float64(c.System)))
	if c.Wall > 0 {
		s += fmt.Sprintf(", %s of a core over %s", units.Percent(float64(c.CPU())/float64(c.Wall)), units.Ns(float64(c.Wall)))
	}
	s += fmt.Sprintf("), peak RSS %s", units.Bytes(c.PeakRSS))
	if c.BPFKnown {
		s += fmt.Sprintf("; BPF programs %s", units.Ns(float64(c.BPF)))
		if c.BPFRuns > 0 {
			s += fmt.Sprintf(" in %d runs (%s each)", c.BPFRuns, units.Ns(float64(c.BPF)/float64(c.BPFRuns)))
		}
		s += ", on the probed tasks' CPUs"
	}
	return s
}

// KernelStatsOn says whether the kernel's BPF run-time statistics are on
// for every program (the kernel.bpf_stats_enabled sysctl).
func KernelStatsOn() bool {
	b, err := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	return err == nil && len(b) > 0 && b[0] == '1'
}
