// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// A probe kind the calibration measures.
type probeKind struct {
	kind ProbeKind
	note string
	// targets are what is timed, run after run in turn: more than one
	// target folds the overhead's dependence on the target into its
	// interval.
	targets []calTarget
	// optional kinds depend on what the kernel offers: when they cannot
	// be measured they are skipped with the reason, not an error.
	optional bool
}

// A calTarget is one thing timed for a probe kind: the calibration
// target's mode argument and the function (or system call) timed. A
// selfTimed target does real work and reports its own unprobed mean, which
// is subtracted from what tickprof measured to leave the overhead.
type calTarget struct {
	mode, symbol string
	selfTimed    bool
}

// The kinds measured on the calibration target.
var probeKinds = []probeKind{
	// cal_spin is there because the overhead seen on a function that does
	// work was about 90-110 ns below the empty functions' on this machine
	// (two functions of ~200 ns, each against its own unprobed mean): with
	// empty targets only, corrected intervals of such functions missed
	// their truth.
	{KindUser, "uprobe+uretprobe on functions whose first instruction (push %rbp) the kernel emulates; runs alternate between cal_empty, cal_spin (~200 ns of work, its own unprobed mean subtracted) and cal_small (a few instructions)",
		[]calTarget{{"user", "cal_empty", false}, {"spin", "cal_spin", true}, {"small", "cal_small", false}}, false},
	{KindUserStepped, "uprobe+uretprobe on an empty function whose first instruction the kernel single-steps",
		[]calTarget{{"stepped", "cal_empty_stepped", false}}, false},
	{KindSyscall, "syscall entry+exit on getppid; includes getppid's own kernel path, so a reference only: time does not subtract it",
		[]calTarget{{"syscall", "getppid", false}}, false},
	{KindGo, "RET-site uprobes on an empty Go function (tickprof's own calibrate.EmptyGo)",
		[]calTarget{{"go", GoSymbol, false}}, true},
	{KindKernel, "kprobe+kretprobe (or fentry+fexit) on getppid's kernel handler; includes the handler's own work, so a reference only: time does not subtract it",
		[]calTarget{{"syscall", "__x64_sys_getppid", false}}, true},
}

// DefaultRuns is the number of independent runs T_ovhd is measured in:
// with the user kind's three targets and runs pinned to the CPUs in turn,
// six runs put every target on both CPUs of a 2-CPU machine.
const DefaultRuns = 6

// DefaultDuration is how long each probe kind is timed in all, over its
// runs, when nothing else is asked (`tickprof calibrate --duration`).
const DefaultDuration = 2500 * time.Millisecond

// minRunDuration is the shortest run: a few batches of the poll period.
const minRunDuration = 200 * time.Millisecond

// OverheadOptions control MeasureOverheads.
type OverheadOptions struct {
	// Duration is how long each kind is timed in all, over its runs
	// (default 2.5s); each run gets Duration/Runs, at least 200ms.
	Duration time.Duration
	// Runs is the number of independent runs, each in a new target
	// process with newly loaded probes (default DefaultRuns; 1 gives the
	// within-run interval only).
	Runs int
	// Confidence is the interval's level (default 0.95).
	Confidence float64
	// Kinds restricts the kinds measured (nil: all; "user",
	// "user-stepped", "syscall", "kernel", "go").
	Kinds []ProbeKind
	// Ordinary runs the calibration target at the ordinary priority. By
	// default it runs at the lowest real-time priority (SCHED_FIFO 1),
	// where ordinary tasks cannot preempt it: a preemption inside an empty
	// function's probe window would count whole milliseconds into T_ovhd,
	// which is the probes' own cost, and make it follow the machine's load.
	Ordinary bool
	// GoTarget is the command of the Go calibration target: a Go program
	// that calls GoSymbol in a loop for the number of seconds appended to
	// it (tickprof: `tickprof calibrate --go-target`; see GoLoop). Empty:
	// the "go" kind is skipped.
	GoTarget []string
}

// MeasureOverheads times the calibration target's empty function(s) and
// getppid with tickprof's own probes and the ns clock; the mean of an empty
// interval is T_ovhd (Lilja 6.2.1). Each kind is timed in o.Runs
// independent runs, and its T_ovhd is the mean of the run means with an
// interval that holds the between-run variation (see CombineRuns). The
// target is built with gcc into dir. Kinds that cannot be measured are
// returned in skipped with the reason.
func MeasureOverheads(ctx context.Context, dir string, o OverheadOptions) (out []Overhead, skipped []string, err error) {
	if o.Duration <= 0 {
		o.Duration = 2500 * time.Millisecond
	}
	if o.Runs <= 0 {
		o.Runs = DefaultRuns
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	exe, err := BuildTarget(dir)
	if err != nil {
		return nil, nil, err
	}
	want := map[ProbeKind]bool{}
	for _, k := range o.Kinds {
		want[k] = true
	}
	for _, pk := range probeKinds {
		if len(want) > 0 && !want[pk.kind] {
			continue
		}
		ov, err := measureKind(ctx, dir, exe, pk, o)
		if err != nil && ctx.Err() == nil && pk.optional {
			skipped = append(skipped, fmt.Sprintf("%s: %v", pk.kind, err))
			continue
		}
		if err != nil {
			return out, skipped, err
		}
		out = append(out, ov)
	}
	return out, skipped, nil
}

// measureKind times o.Runs runs of pk, its targets in turn, and combines
// them.
func measureKind(ctx context.Context, dir, exe string, pk probeKind, o OverheadOptions) (Overhead, error) {
	d := o.Duration / time.Duration(o.Runs)
	if d < minRunDuration {
		d = minRunDuration
	}
	var runs []Overhead
	var names []string
	for i := 0; i < o.Runs; i++ {
		t := pk.targets[i%len(pk.targets)]
		secs := strconv.FormatFloat(d.Seconds()+5, 'f', 1, 64)
		argv, texe := []string{exe, t.mode, secs}, exe
		own := ""
		if t.selfTimed {
			own = filepath.Join(dir, fmt.Sprintf("own-%s-%d", t.symbol, i))
			argv = append(argv, own)
		}
		if t.mode == "go" {
			if len(o.GoTarget) == 0 {
				return Overhead{}, errors.New("no Go calibration target given")
			}
			texe = o.GoTarget[0]
			argv = append(append([]string{}, o.GoTarget...), secs)
		}
		// Pin run i to CPU i mod N: successive runs otherwise tend to land
		// on the same CPU and agree more closely than a later run on
		// another CPU does with them (seen: five runs within 7 ns, a
		// sixth 150 ns away), which made the interval too narrow.
		r, err := timeRun(ctx, argv, texe, pk.kind, t.symbol, d, i%runtime.NumCPU(), o)
		if err != nil {
			return Overhead{}, err
		}
		if t.selfTimed {
			if r, err = subtractOwn(r, own); err != nil {
				return Overhead{}, fmt.Errorf("calibration %s on %s: %w", pk.kind, t.symbol, err)
			}
		}
		runs = append(runs, r)
		if i < len(pk.targets) {
			names = append(names, t.symbol)
		}
	}
	ov, err := CombineRuns(runs, o.Confidence)
	if err != nil {
		return Overhead{}, fmt.Errorf("calibration %s: %w", pk.kind, err)
	}
	ov.Kind, ov.Target, ov.Note = pk.kind, strings.Join(names, "+"), pk.note
	return ov, nil
}

// subtractOwn turns a self-timed target's measured time r into its probe
// overhead: r minus the mean the target measured on an unprobed copy of
// the same code (written to path as "MEAN_NS CALLS"). The own mean rests
// on far more calls than the probed one and is taken as exact.
func subtractOwn(r Overhead, path string) (Overhead, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Overhead{}, fmt.Errorf("read the target's own mean: %w", err)
	}
	var own, n float64
	if _, err := fmt.Sscan(string(b), &own, &n); err != nil || n < 1000 || !(own > 0) {
		return Overhead{}, fmt.Errorf("the target's own mean %q: want \"MEAN_NS CALLS\" over at least 1000 calls", strings.TrimSpace(string(b)))
	}
	r.MeanNs -= own
	r.LowNs -= own
	r.HighNs -= own
	return r, nil
}

// CombineRuns combines the T_ovhd of k independent runs into one at
// confidence conf. MeanNs is the mean of the run means, and MeanLowNs..
// MeanHighNs its Student t interval on k-1 degrees of freedom, the run
// means taken as k independent measurements of T_ovhd (Lilja 4.4.1.2).
//
// LowNs..HighNs, the interval Correct subtracts, is the wider of
//
//   - the Student t prediction interval for the overhead of one new run,
//     mean ± t(k-1) s sqrt(1 + 1/k), s the standard deviation of the run
//     means; and
//   - the pooled within-run interval, mean ± z sqrt(Σ s_i²)/k with s_i the
//     runs' own standard errors (the only one for a single run).
//
// Why the runs: the probe overhead is not one fixed number but varies with
// the conditions it is measured under (Lilja 6.2.1 and 6.6: the
// perturbation a tool adds depends on the system's state): which CPU and
// cache state a new process lands in, what else runs on the machine, which
// function is probed. On a 2-CPU VM successive single runs gave 933, 938
// and 987 ns, each with a within-run interval of about ±20 ns, so one run's
// interval was far too narrow to correct another run's mean.
//
// Why a prediction interval and not the mean's: a measurement that is
// corrected is one more run, and its own overhead differs from the mean
// overhead by the between-run deviation, whose standard deviation is s,
// not s/sqrt(k). Correcting with the mean's interval held a ~200 ns
// function's own mean in 8 of 10 tries at 95%, the prediction interval in
// 10 of 10.
//
// The result's Kind, Target and Note are left empty.
func CombineRuns(runs []Overhead, conf float64) (Overhead, error) {
	if len(runs) == 0 {
		return Overhead{}, errors.New("no runs to combine")
	}
	if !(conf > 0 && conf < 1) {
		return Overhead{}, fmt.Errorf("confidence %v: want a level between 0 and 1", conf)
	}
	k := float64(len(runs))
	out := Overhead{Confidence: conf, Runs: len(runs), MinNs: math.MaxUint64}
	var se2, bpf float64
	var bpfCalls uint64
	for i, r := range runs {
		if i == 0 || r.Links == out.Links {
			out.Links = r.Links
		} else {
			out.Links = "mixed"
		}
		out.RunMeansNs = append(out.RunMeansNs, r.MeanNs)
		out.MeanNs += r.MeanNs / k
		se2 += r.StdErrNs * r.StdErrNs
		out.Calls += r.Calls
		out.MinNs = min(out.MinNs, r.MinNs)
		if r.BPFNsPerCall > 0 {
			bpf += r.BPFNsPerCall * float64(r.Calls)
			bpfCalls += r.Calls
		}
	}
	if bpfCalls > 0 {
		out.BPFNsPerCall = bpf / float64(bpfCalls)
	}
	z := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	pooledSE := math.Sqrt(se2) / k
	out.StdErrNs, out.Method = pooledSE, "pooled-within-run"
	hw := z * pooledSE
	out.MeanLowNs, out.MeanHighNs = out.MeanNs-hw, out.MeanNs+hw
	if len(runs) >= 2 {
		b, err := estimate.MeanOfSamples(out.RunMeansNs, estimate.Options{Confidence: conf})
		if err != nil {
			return Overhead{}, fmt.Errorf("combine %d runs: %w", len(runs), err)
		}
		out.RunSDNs = b.StdErr * math.Sqrt(k)
		out.MeanLowNs, out.MeanHighNs = b.Low, b.High
		tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k - 1}.Quantile(1 - (1-conf)/2)
		predSE := out.RunSDNs * math.Sqrt(1+1/k)
		if phw := tq * predSE; phw > hw {
			hw, out.StdErrNs, out.DF, out.Method = phw, predSE, len(runs)-1, "between-runs-prediction"
		}
	}
	// An overhead is not negative: a wide interval (few runs, runs far
	// apart) stops at 0.
	out.LowNs, out.HighNs = math.Max(0, out.MeanNs-hw), out.MeanNs+hw
	out.MeanLowNs = math.Max(0, out.MeanLowNs)
	return out, nil
}

// timeRun runs argv (whose executable is exe), times symbol in it with
// tickprof's probes of kind and the ns clock for d, and returns the run's
// T_ovhd with its within-run interval. cpu >= 0 pins the target to that CPU.
func timeRun(ctx context.Context, argv []string, exe string, kind ProbeKind, symbol string, d time.Duration, cpu int, o OverheadOptions) (Overhead, error) {
	var t timing.Targets
	switch kind {
	case KindKernel:
		t.Kernel, t.KernelAttach = []string{symbol}, timing.AttachAuto
	case KindSyscall:
		t.Syscalls = []string{symbol}
	default:
		t.Users, t.MaxProbes = []string{exe + ":" + symbol}, 1
	}
	st, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		st = nil // the overhead is still measured; the BPF cost is not
	} else {
		defer st.Close()
	}
	// Started held before exec, like `tickprof time -- CMD`: the probes are
	// in place before its first call. Polled into batches (at least ten a
	// run): the batch-means interval covers load that drifts during the
	// run (successive calls are not independent, Beilner eq. 11).
	s, err := timing.Open(ctx, timing.Config{Command: argv, Targets: t, NoRecords: true,
		Clock:    timing.Clock{Kind: timing.ClockNS},
		Estimate: estimate.Options{Confidence: o.Confidence},
		Interval: min(200*time.Millisecond, d/10), Duration: d, Correction: timing.CorrectionOff})
	if err != nil {
		return Overhead{}, fmt.Errorf("calibration target %s: %w", symbol, err)
	}
	defer s.Close()
	if err := schedule(s.PID(), cpu, o.Ordinary); err != nil {
		return Overhead{}, err
	}
	run, err := s.Run(ctx)
	if err != nil {
		return Overhead{}, err
	}
	if err := ctx.Err(); err != nil {
		return Overhead{}, err
	}
	if err := s.PollErr(); err != nil {
		return Overhead{}, fmt.Errorf("calibration %s: %w", kind, err)
	}
	if len(run.Targets) != 1 || run.Targets[0].Calls < 2 {
		return Overhead{}, fmt.Errorf("calibration: %s was not called while timed", symbol)
	}
	tr := run.Targets[0]
	// The ns clock: ticks are exact ns, and the batches give batch means.
	r, err := estimate.Time(tr.Counts, estimate.Options{Confidence: o.Confidence})
	if err != nil {
		return Overhead{}, fmt.Errorf("calibration %s: %w", kind, err)
	}
	ov := Overhead{Kind: kind, Target: symbol, Calls: tr.Calls, Runs: 1, Links: run.Links,
		MeanNs: r.Mean, LowNs: r.Low, HighNs: r.High, StdErrNs: r.StdErr, Confidence: r.Confidence, Method: r.Method}
	if tr.Exact != nil {
		ov.MinNs = tr.Exact.Min
	}
	if st != nil && run.BPFRuntime > 0 {
		ov.BPFNsPerCall = float64(run.BPFRuntime) / float64(tr.Calls)
	}
	return ov, nil
}

// schedule pins the held calibration target to cpu (when >= 0) and, unless
// ordinary, runs it at the lowest real-time priority; threads it starts
// later inherit both.
func schedule(pid, cpu int, ordinary bool) error {
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return fmt.Errorf("pin the calibration target to CPU %d: %w", cpu, err)
		}
	}
	if !ordinary {
		attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}
		if err := unix.SchedSetAttr(pid, &attr, 0); err != nil {
			return fmt.Errorf("run the calibration target at a real-time priority (or set OverheadOptions.Ordinary): %w", err)
		}
	}
	return nil
}
