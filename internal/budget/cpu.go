// SPDX-License-Identifier: Apache-2.0

package budget

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture tickprof runs on).
const userHZ = 100

// cpuClock reads a process's CPU time (cpu0 and cpuShare read the same one).
type cpuClock struct {
	read func(pid int) (time.Duration, error)
	res  time.Duration // its resolution
}

// processCPU chooses the finest clock of process pid's CPU time that can
// be read: the sum of its live threads' run time in ns (the first field of
// /proc/PID/task/TID/schedstat), else every thread's user and system time
// from /proc/PID/stat at the resolution of 1/userHZ. It returns the clock
// and its first reading. A thread that exits between two readings of the
// first takes its run time out of the sum: the share computed from them is
// then too small, which projects a larger load and errs on the side of the
// budget.
func processCPU(pid int) (cpuClock, time.Duration, error) {
	if c, err := threadsCPU(pid); err == nil {
		return cpuClock{threadsCPU, time.Nanosecond}, c, nil
	}
	c, err := statCPU(pid)
	return cpuClock{statCPU, time.Second / userHZ}, c, err
}

// threadsCPU sums the run time of pid's live threads, in ns.
func threadsCPU(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tids, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, t := range tids {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread has exited
			}
			return 0, err
		}
		f := bytes.Fields(b)
		if len(f) == 0 {
			return 0, fmt.Errorf("%s/%s/schedstat: empty", dir, t.Name())
		}
		v, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, t.Name(), err)
		}
		sum += v
	}
	if sum == 0 {
		return 0, fmt.Errorf("%s: no thread's run time", dir)
	}
	return time.Duration(sum), nil
}

// statCPU returns every thread's user and system time from /proc/PID/stat.
func statCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: the fields
	// start after the last ')'. utime and stime are fields 14 and 15, the
	// 12th and 13th after the name.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// cpuShare is the share of one CPU the target has had since the run
// started (0: unknown: no single process, or too little time to tell).
// It takes 10 ms of the target's CPU time, or ten of the clock's ticks if
// coarser, counted one tick short: a lower bound (a smaller share projects
// a larger load). Until then the load is projected per wall-clock second,
// which is too small for a target starved of CPU: the ns clock of the
// threads' run times makes that first stretch short.
func (r *Runner) cpuShare() float64 {
	pid := r.ls.Options().PID
	if pid == 0 || r.cpu0 < 0 || r.cpuClock.read == nil {
		return 0
	}
	c, err := r.cpuClock.read(pid)
	el := time.Since(r.start)
	used := c - r.cpu0
	if err != nil || el <= 0 || used < max(10*time.Millisecond, 10*r.cpuClock.res) {
		return 0
	}
	return float64(used-r.cpuClock.res) / float64(el)
}
