// SPDX-License-Identifier: Apache-2.0

// Command dither measures what dithered sampling periods cost, and what
// the mechanisms set aside would have cost, on a CPU-bound target
// (bench/sample/target.c), interleaving the configurations A B C ... A B C
// in every repetition. Per rate it runs:
//
//   - none: the target alone;
//   - fixed, dithered: a sampler session (sampler.Config.FixedPeriod on and
//     off) sampling the target;
//   - raw, restart/5, restart/1: bare cpu-clock events (no BPF program) at
//     the rate on every CPU; alone, restarted with PERF_EVENT_IOC_PERIOD
//     every ~5 periods (as the sampler does), and every period (a restart
//     per sample: the per-sample dither done from user space);
//   - ticks/1, ticks/8: the sampling program on cpu-clock events at the rate
//     and at 8 times it with no target marked, so that it returns at once:
//     the extra interrupts of a finer clock thinned in BPF.
//
// It prints, per configuration, the target's CPU time for its fixed work
// against the run of none in the same repetition (interrupts are charged
// to the interrupted task: no IRQ_TIME_ACCOUNTING), and this process's own
// CPU while the target ran (the sampler's drain and restarts, or the
// restarts alone), as medians with their ranges. Run as root from the
// repository root:
//
//	go run ./bench/dither [-reps 7] [-rates 99,999,4999] [-rounds 3000]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/bench/benchkit"
	tpbpf "github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/sampler"
)

func main() {
	reps := flag.Int("reps", 7, "repetitions of every configuration")
	rates := flag.String("rates", "99,999,4999", "sampling rates (Hz per CPU)")
	rounds := flag.Int("rounds", 3000, "rounds of the target's fixed work")
	flag.Parse()
	if err := run(*reps, *rates, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "dither:", err)
		os.Exit(1)
	}
}

// configs are the configurations, in the order each repetition runs them.
var configs = []string{"none", "fixed", "dithered", "raw", "restart/5", "restart/1", "ticks/1", "ticks/8"}

// result is one run: the target's CPU time for its work and this
// process's CPU per wall second while it ran (ns per ns); period is the
// sampler's mean period (0 outside sessions).
type result struct{ target, own, period float64 }

func run(reps int, rates string, rounds int) error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "dither-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "target")
	if out, err := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", bin, "bench/sample/target.c").CombinedOutput(); err != nil {
		return fmt.Errorf("gcc: %v: %s", err, out)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%d CPUs, load average %s; %d repetitions, %d rounds of work\n", runtime.NumCPU(), strings.Fields(string(load))[0], reps, rounds)
	for _, f := range strings.Split(rates, ",") {
		hz, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("rate %q: %w", f, err)
		}
		res := map[string][]result{}
		for range reps {
			for _, c := range configs {
				r, err := runConfig(c, hz, bin, rounds)
				if err != nil {
					return fmt.Errorf("%s at %d Hz: %w", c, hz, err)
				}
				res[c] = append(res[c], r)
			}
		}
		report(hz, res)
	}
	return nil
}

// report prints one rate's table: each configuration's target slowdown
// against none of the same repetition and its own CPU, in percent.
func report(hz int, res map[string][]result) {
	fmt.Printf("\n%d Hz\n%-10s %-30s %-30s %s\n", hz, "config", "target CPU vs none", "own CPU, % of a core", "mean period")
	for _, c := range configs {
		var slow, own []float64
		for i, r := range res[c] {
			slow = append(slow, 100*(r.target/res["none"][i].target-1))
			own = append(own, 100*r.own)
		}
		period := "-"
		if p := res[c][0].period; p > 0 {
			period = fmt.Sprintf("%.1f us (nominal %.1f)", p/1e3, 1e6/float64(hz))
		}
		fmt.Printf("%-10s %-30s %-30s %s\n", c, benchkit.MedRange(slow, "%+.2f%%"), benchkit.MedRange(own, "%.3f%%"), period)
	}
}

// runConfig runs the target once under configuration c at hz.
func runConfig(c string, hz int, bin string, rounds int) (result, error) {
	args := []string{bin, strconv.Itoa(rounds)}
	switch c {
	case "none":
		return measure(args, func() {})
	case "fixed", "dithered":
		return session(args, hz, c == "fixed")
	case "raw", "restart/5", "restart/1":
		every := map[string]float64{"raw": 0, "restart/5": 5.07, "restart/1": 1}[c]
		stop, err := rawClocks(hz, every)
		if err != nil {
			return result{}, err
		}
		return measure(args, stop)
	default: // ticks/1, ticks/8
		mult := map[string]int{"ticks/1": 1, "ticks/8": 8}[c]
		stop, err := idleProgram(hz * mult)
		if err != nil {
			return result{}, err
		}
		return measure(args, stop)
	}
}

// measure runs the target and then stop, and returns the target's CPU
// time and this process's CPU share while it ran.
func measure(args []string, stop func()) (result, error) {
	c0, t0 := selfCPU(), time.Now()
	out, err := exec.Command(args[0], args[1:]...).Output()
	own := (selfCPU() - c0) / float64(time.Since(t0).Nanoseconds())
	stop()
	if err != nil {
		return result{}, err
	}
	cpu, err := targetCPU(out)
	return result{target: cpu, own: own}, err
}

// session samples the target with the sampler.
func session(args []string, hz int, fixed bool) (result, error) {
	var out bytes.Buffer
	s, err := sampler.Open(context.Background(), sampler.Config{Frequency: hz, FixedPeriod: fixed, Command: args, Stdout: &out})
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	res, err := s.Run(context.Background())
	if err != nil {
		return result{}, err
	}
	cpu, err := targetCPU(out.Bytes())
	st := res.Stats
	return result{target: cpu, own: st.DrainCPU / float64(res.Profile.Duration.Nanoseconds()), period: st.Period}, err
}

// targetCPU reads "wall_ns N cpu_ns N" (bench/sample/target.c).
func targetCPU(out []byte) (float64, error) {
	f := strings.Fields(string(out))
	if len(f) != 4 || f[2] != "cpu_ns" {
		return 0, fmt.Errorf("target printed %q", out)
	}
	return strconv.ParseFloat(f[3], 64)
}

// rawClocks opens a cpu-clock event at hz on every CPU with no program
// and, when every > 0, restarts them all from one goroutine with periods
// drawn from [P/2, 3P/2] after waits drawn from [every/2, 3 every/2]
// periods. The returned function stops and closes them.
func rawClocks(hz int, every float64) (func(), error) {
	p := uint64(1e9) / uint64(hz)
	var fds []int
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	for cpu := range runtime.NumCPU() {
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})), Sample: p}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("perf_event_open on CPU %d: %w", cpu, err)
		}
		fds = append(fds, fd)
	}
	if every == 0 {
		return closeAll, nil
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(float64(p) * every * (0.5 + rand.Float64()))):
			}
			for _, fd := range fds {
				v := p/2 + uint64(rand.Int64N(int64(p)+1))
				unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_PERIOD, uintptr(unsafe.Pointer(&v)))
			}
		}
	}()
	return func() { close(done); wg.Wait(); closeAll() }, nil
}

// idleProgram attaches the sampling program at hz on every CPU with no
// target, so that it counts each tick and returns.
func idleProgram(hz int) (func(), error) {
	var objs tpbpf.SampleObjects
	if err := tpbpf.LoadSampleObjects(&objs, nil); err != nil {
		return nil, fmt.Errorf("load the sampling programs: %w", err)
	}
	clocks, err := sampler.AttachCPUClocks(objs.SampleCpu, hz)
	if err != nil {
		objs.Close()
		return nil, err
	}
	return func() { clocks.Close(); objs.Close() }, nil
}

// selfCPU is this process's user and system CPU time (ns).
func selfCPU() float64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano() + ru.Stime.Nano())
}
