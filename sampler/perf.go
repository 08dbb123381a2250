// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// MaxFrequency is the highest sampling rate accepted by New; the kernel may
// allow less (kernel.perf_event_max_sample_rate).
const MaxFrequency = 100000

// cpuClock is one software cpu-clock perf event on one CPU with the sampling
// program attached.
type cpuClock struct {
	cpu    int
	fd     int
	on     time.Time // when it was enabled
	period uint64    // the period it was opened with (ns)
}

// openCPUClocks opens a cpu-clock event on every online CPU, each with a
// period from first (nil: the period 1e9/hz ns the kernel would derive
// from the frequency, in the unit PERF_EVENT_IOC_PERIOD takes, see
// dither.go), attaches prog to each and enables them. On error everything
// opened so far is closed.
func openCPUClocks(prog *ebpf.Program, hz int, first func() uint64) ([]cpuClock, error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	if max, err := readSysctlInt("/proc/sys/kernel/perf_event_max_sample_rate"); err == nil && hz > max {
		return nil, fmt.Errorf("sampling rate %d Hz is above kernel.perf_event_max_sample_rate=%d: lower -F or raise the sysctl", hz, max)
	}
	var clocks []cpuClock
	closeAll := func() {
		for _, c := range clocks {
			unix.Close(c.fd)
		}
	}
	for _, cpu := range cpus {
		period := clockPeriod(hz)
		if first != nil {
			period = first()
		}
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: period,
			Bits:   unix.PerfBitDisabled,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			closeAll()
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				return nil, fmt.Errorf("open cpu-clock perf event on CPU %d: %w (run as root or lower kernel.perf_event_paranoid)", cpu, err)
			}
			return nil, fmt.Errorf("open cpu-clock perf event on CPU %d at %d Hz: %w", cpu, hz, err)
		}
		clocks = append(clocks, cpuClock{cpu: cpu, fd: fd, period: period})
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
			closeAll()
			return nil, fmt.Errorf("attach sampling program to perf event on CPU %d: %w", cpu, err)
		}
	}
	for i, c := range clocks {
		if err := unix.IoctlSetInt(c.fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			closeAll()
			return nil, fmt.Errorf("enable perf event on CPU %d: %w", c.cpu, err)
		}
		clocks[i].on = time.Now()
	}
	return clocks, nil
}

// clockPeriod is the cpu-clock period in ns for hz samples per second.
func clockPeriod(hz int) uint64 { return uint64(1e9) / uint64(hz) }

// closeCPUClocks disables and closes the events.
func closeCPUClocks(clocks []cpuClock) {
	for _, c := range clocks {
		_ = unix.IoctlSetInt(c.fd, unix.PERF_EVENT_IOC_DISABLE, 0)
		unix.Close(c.fd)
	}
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("read online CPUs: %w", err)
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("parse CPU list %q: %w", s, err)
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("parse CPU list %q: %w", s, err)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("parse CPU list %q: no CPUs", s)
	}
	return cpus, nil
}

func readSysctlInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// cpuClocks is a set of attached per-CPU cpu-clock events.
type cpuClocks []cpuClock

// Close disables and closes the events.
func (c cpuClocks) Close() error {
	closeCPUClocks(c)
	return nil
}

// AttachCPUClocks opens a cpu-clock event at hz on every online CPU with
// prog attached (a perf_event program). The benchmark uses it to run the
// sampling programs alone; Start does the same for a session.
func AttachCPUClocks(prog *ebpf.Program, hz int) (io.Closer, error) {
	c, err := openCPUClocks(prog, hz, nil)
	if err != nil {
		return nil, err
	}
	return cpuClocks(c), nil
}
