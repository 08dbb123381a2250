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

// processCPU returns the CPU time process pid has used (every thread, user
// and system), at the resolution of 1/userHZ.
func processCPU(pid int) (time.Duration, error) {
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
func (r *Runner) cpuShare() float64 {
	pid := r.ls.Options().PID
	if pid == 0 || r.cpu0 < 0 {
		return 0
	}
	c, err := processCPU(pid)
	el := time.Since(r.start)
	// Ten ticks at least, and one tick less than counted: the share is
	// then a lower bound (a smaller share projects a larger load), within
	// 10% of the count.
	if err != nil || c-r.cpu0 < 10*time.Second/userHZ || el <= 0 {
		return 0
	}
	return float64(c-r.cpu0-time.Second/userHZ) / float64(el)
}
