// SPDX-License-Identifier: Apache-2.0

// Package benchkit holds what the C-target benchmarks under bench/ share:
// building a target with gcc (internal/cbuild), starting it (optionally SCHED_FIFO) and
// reading the figure it prints, enabling and summing BPF program run time,
// and printing a median with its range. Of third-party modules it imports
// only cilium/ebpf and x/sys; of the repository's, internal/cbuild (both
// checked by internal/layers).
package benchkit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/tickprof/tickprof/internal/cbuild"
	"golang.org/x/sys/unix"
)

// BuildC compiles the C source src into the executable out with
// gcc -O0 -fno-omit-frame-pointer and the extra flags (for example
// -fcf-protection=none). -O0 keeps `push %rbp` first in every function: an
// instruction the kernel emulates under a uprobe.
func BuildC(out, src string, flags ...string) error {
	return cbuild.Build(out, cbuild.Program{Sources: []string{src}, Flags: append([]string{"-O0", "-fno-omit-frame-pointer"}, flags...)})
}

// Chrt returns the path of chrt when rt is set and chrt is installed, else
// "" (the target then runs under the default policy).
func Chrt(rt bool) string {
	if !rt {
		return ""
	}
	p, _ := exec.LookPath("chrt")
	return p
}

// Target is a started C target that waits for a line on its standard input
// before it runs its calls.
type Target struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

// Start starts bin with args and, when chrt is not "", moves it to
// SCHED_FIFO priority 50. The caller must Kill the target.
func Start(bin, chrt string, args ...string) (*Target, error) {
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t := &Target{cmd: cmd, stdin: stdin, stdout: stdout}
	if chrt != "" {
		if out, err := exec.Command(chrt, "-f", "-p", "50", fmt.Sprint(cmd.Process.Pid)).CombinedOutput(); err != nil {
			t.Kill()
			return nil, fmt.Errorf("chrt: %v: %s", err, out)
		}
	}
	return t, nil
}

// Pid returns the target's process id.
func (t *Target) Pid() int { return t.cmd.Process.Pid }

// Run lets the target run, waits for its exit and returns the value of the
// last line it printed of the form key=value (0 if none).
func (t *Target) Run(key string) float64 { return t.RunAll()[key] }

// RunAll lets the target run, waits for its exit and returns every value
// it printed as a line key=value (the last one of each key).
func (t *Target) RunAll() map[string]float64 {
	io.WriteString(t.stdin, "go\n")
	sc := bufio.NewScanner(t.stdout)
	vs := map[string]float64{}
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if x, err := strconv.ParseFloat(v, 64); ok && err == nil {
			vs[k] = x
		}
	}
	t.cmd.Wait()
	return vs
}

// Kill kills the target (a no-op once it has exited and been waited for).
func (t *Target) Kill() { t.cmd.Process.Kill() }

// ProgRuntime returns the run time the kernel's statistics count for the
// programs (ebpf.EnableStats must be on; programs without statistics count
// nothing).
func ProgRuntime(ps ...*ebpf.Program) time.Duration {
	var d time.Duration
	for _, p := range ps {
		if s, err := p.Stats(); err == nil {
			d += s.Runtime
		}
	}
	return d
}

// MedRange formats the median of v and its range as "m [min, max]", each
// with the format f.
func MedRange(v []float64, f string) string {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return fmt.Sprintf(f+" ["+f+", "+f+"]", s[len(s)/2], s[0], s[len(s)-1])
}

// EnableStats turns on the kernel's BPF run-time statistics (root only)
// until the returned closer is closed.
func EnableStats() (io.Closer, error) {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("enable BPF run-time statistics (run as root): %w", err)
	}
	return stats, nil
}

// UprobeSource is bench/uprobe/target.c, the C benchmarks' workload:
// bench_fn, about 200 ns of work, called in a loop.
func UprobeSource() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "uprobe", "target.c")
}

// UprobeTarget builds UprobeSource with flags (see BuildC) as "target" in
// a new temporary directory named after prefix, and returns it with the
// function that removes that directory.
func UprobeTarget(prefix string, flags ...string) (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	bin = filepath.Join(dir, "target")
	if err := BuildC(bin, UprobeSource(), flags...); err != nil {
		remove()
		return "", nil, err
	}
	return bin, remove, nil
}
