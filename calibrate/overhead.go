package calibrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/loader"
)

// A probe kind the calibration measures.
type probeKind struct {
	kind, mode, target, note string
	// optional kinds depend on what the kernel offers: when they cannot
	// be measured they are skipped with the reason, not an error.
	optional bool
}

// The kinds measured on the calibration target: mode is its argument.
var probeKinds = []probeKind{
	{"user", "user", "cal_empty", "uprobe+uretprobe on an empty function whose first instruction (push %rbp) the kernel emulates", false},
	{"user-stepped", "stepped", "cal_empty_stepped", "uprobe+uretprobe on an empty function whose first instruction the kernel single-steps", false},
	{"syscall", "syscall", "getppid", "syscall entry+exit on getppid; includes getppid's own kernel path", false},
	{"go", "go", GoSymbol, "RET-site uprobes on an empty Go function (tickprof's own calibrate.EmptyGo)", true},
	{"kernel", "syscall", "__x64_sys_getppid", "kprobe+kretprobe (or fentry+fexit) on getppid's kernel handler; includes the handler's own work", true},
}

// OverheadOptions control MeasureOverheads.
type OverheadOptions struct {
	// Duration is how long each kind is timed (default 2s).
	Duration time.Duration
	// Confidence is the interval's level (default 0.95).
	Confidence float64
	// Kinds restricts the kinds measured (nil: all; "user",
	// "user-stepped", "syscall", "kernel", "go").
	Kinds []string
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
// interval is T_ovhd (Lilja 6.2.1). The target is built with gcc into dir.
// Kinds that cannot be measured are returned in skipped with the reason.
func MeasureOverheads(ctx context.Context, dir string, o OverheadOptions) (out []Overhead, skipped []string, err error) {
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	exe, err := BuildTarget(dir)
	if err != nil {
		return nil, nil, err
	}
	want := map[string]bool{}
	for _, k := range o.Kinds {
		want[k] = true
	}
	for _, pk := range probeKinds {
		if len(want) > 0 && !want[pk.kind] {
			continue
		}
		ov, err := measureOne(ctx, exe, pk, o)
		if err != nil && ctx.Err() == nil && (pk.optional || errors.Is(err, loader.ErrKindUnsupported)) {
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

// measureOne runs the target in one mode and times it.
func measureOne(ctx context.Context, exe string, pk probeKind, o OverheadOptions) (Overhead, error) {
	secs := o.Duration.Seconds() + 5
	// Started held before exec, like `tickprof time -- CMD`: the probes are
	// in place before its first call.
	argv := []string{exe, pk.mode, strconv.FormatFloat(secs, 'f', 1, 64)}
	if pk.kind == "go" {
		if len(o.GoTarget) == 0 {
			return Overhead{}, errors.New("no Go calibration target given")
		}
		exe = o.GoTarget[0]
		argv = append(append([]string{}, o.GoTarget...), strconv.FormatFloat(secs, 'f', 1, 64))
	}
	h, err := loader.StartHeld(argv)
	if err != nil {
		return Overhead{}, fmt.Errorf("start the calibration target: %w", err)
	}
	defer func() {
		h.Kill()
		h.Wait()
	}()
	pid := h.Pid
	if !o.Ordinary {
		// Threads the target starts later inherit the policy.
		attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}
		if err := unix.SchedSetAttr(pid, &attr, 0); err != nil {
			return Overhead{}, fmt.Errorf("run the calibration target at a real-time priority (or set OverheadOptions.Ordinary): %w", err)
		}
	}
	var specs []loader.Spec
	switch {
	case pk.kind == "kernel":
		specs, err = loader.ResolveKernelFuncs([]string{pk.target}, loader.AttachAuto)
	case pk.mode == "syscall":
		specs, err = loader.ResolveSyscall(pk.target, loader.SyscallAuto)
	default:
		specs, err = loader.ResolveUser(pid, exe+":"+pk.target, 1)
	}
	if err != nil {
		return Overhead{}, fmt.Errorf("%s: %w", pk.target, err)
	}
	st, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		st = nil // the overhead is still measured; the BPF cost is not
	} else {
		defer st.Close()
	}
	s, err := loader.Open(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}, PID: pid, NoRecords: true}, specs)
	if err != nil {
		return Overhead{}, err
	}
	defer s.Close()
	before := progStats(s.Programs())
	h.Release()
	// Poll into batches: the batch-means interval covers load that drifts
	// during the run (successive calls are not independent, Beilner eq. 11).
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for end := time.After(o.Duration); ; {
		select {
		case <-ctx.Done():
			return Overhead{}, ctx.Err()
		case <-tick.C:
			if _, err := s.Poll(); err != nil {
				return Overhead{}, err
			}
			continue
		case <-end:
		}
		break
	}
	s.Stop()
	p, err := s.Poll()
	if err != nil {
		return Overhead{}, err
	}
	if len(p.Totals) != 1 || p.Totals[0].Calls < 2 {
		return Overhead{}, fmt.Errorf("calibration: %s was not called while timed", pk.target)
	}
	c := p.Totals[0]
	r, err := estimate.Time(nsCounts(c, s.Batches(0)), estimate.Options{Confidence: o.Confidence})
	if err != nil {
		return Overhead{}, fmt.Errorf("calibration %s: %w", pk.kind, err)
	}
	ov := Overhead{Kind: pk.kind, Target: pk.target, Note: pk.note, Calls: c.Calls,
		MeanNs: r.Mean, LowNs: r.Low, HighNs: r.High, StdErrNs: r.StdErr, Confidence: r.Confidence, Method: r.Method, MinNs: c.NsMin}
	if after := progStats(s.Programs()); st != nil && after.runtime > before.runtime {
		ov.BPFNsPerCall = float64(after.runtime-before.runtime) / float64(c.Calls)
	}
	return ov, nil
}

type statSum struct{ runtime, count uint64 }

// progStats sums the run-time statistics of programs (zero when
// statistics are off).
func progStats(ps []*ebpf.Program) statSum {
	var s statSum
	for _, p := range ps {
		if st, err := p.Stats(); err == nil {
			s.runtime += uint64(st.Runtime)
			s.count += st.RunCount
		}
	}
	return s
}

// nsCounts are the estimator's inputs for exact ns durations: the ns clock
// is a clock of resolution 1 ns, so the ns sums are tick sums, and the
// batches give the batch-means interval.
func nsCounts(c loader.Counters, batches []loader.Counters) estimate.Counts {
	ec := estimate.Counts{Resolution: 1, Calls: c.Calls, Ticks: c.NsSum}
	if c.NsSq.Hi == 0 {
		ec.TicksSq, ec.HasTicksSq = c.NsSq.Lo, true
	}
	var calls, ns uint64
	for _, b := range batches {
		if b.Calls == 0 {
			continue
		}
		ec.Batches = append(ec.Batches, estimate.Batch{Calls: b.Calls, Ticks: b.NsSum})
		calls += b.Calls
		ns += b.NsSum
	}
	if calls != c.Calls || ns != c.NsSum {
		ec.Batches = nil
	}
	return ec
}
