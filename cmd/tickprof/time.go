package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/loader"
)

// timeFlags are the flags of `tickprof time`.
type timeFlags struct {
	users, syscalls, kfuncs []string
	pid                     int
	clock                   string
	duration                time.Duration
	precision               string
	confidence              string
	jsonOut, pprofOut       string
	validate                bool
	maxProbes               int
	interval                time.Duration
	attach                  string
	noCorrect               bool
	// calDir is where the machine's calibration is looked up; "" means
	// calibrate.Dir() (tests point it at a directory of their own).
	calDir string
}

func newTimeCmd() *cobra.Command {
	var f timeFlags
	cmd := &cobra.Command{
		Use:   "time [flags] (-p PID | -- CMD ARGS...)",
		Short: "Time functions and kernel paths, each mean with its confidence interval",
		Long: `time attaches to functions of a running process (-p PID) or of a command it
starts held before exec (-- CMD ARGS, so the very first calls count), counts
clock ticks crossed inside every call in BPF, and reports each target's mean
time per call with a confidence interval.

Targets (repeatable):
  -u SYMBOL          a function of the process's executable
  -u LIB:SYMBOL      a function of a mapped shared library (libc:malloc)
  -u PATH:SYMBOL     a function of the file at PATH
  -u 'GLOB'          every matching function, at most --max-probes
  -u 'main.(*T).M'   a Go function, named as Go prints it (probed at its
                     RET instructions: a uretprobe never touches Go code)
  -s SYSCALL         a system call's kernel path
  -k FUNC            a kernel function

Clocks (--clock): jiffies (the kernel tick, period measured), tick:DUR
(monotonic time quantized to DUR), ns (exact). The default is ns for user
functions and jiffies for syscalls and kernel functions (see README).

It stops at --duration, when every interval is within --precision, when the
target exits, or on Ctrl-C / SIGTERM, and always prints and writes what it
gathered. A command started after -- is ended with SIGTERM when timing stops
before it exits. --precision stops only after at least 30 polling batches
(30 x --interval) and 30 tick crossings (calls, with the ns clock), so that a
spread that looks small by luck early on cannot stop it.

Probe overhead: every probe pair adds its own cost to the time it measures.
When ` + "`tickprof calibrate`" + ` has measured this machine, time subtracts that
overhead, carries its uncertainty into each interval, and shows the raw
(measured) mean beside the corrected one; --no-correct shows raw means only.
--precision applies to the measured interval.`,
		Example: `  tickprof time -u libc:malloc -p 1234 --precision 2%
  tickprof time -u 'sqlite3_*' --duration 10s -o prof.pb.gz -- ./app
  tickprof time -u work --clock jiffies --validate -- ./bench
  tickprof time -u 'main.(*Server).handle' -p 4321 --json run.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usagef("unexpected argument %q: put the command to run after --", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runTime(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.users, "user", "u", nil, "user function: SYMBOL, LIB:SYMBOL, PATH:SYMBOL or a glob (repeatable)")
	fl.StringArrayVarP(&f.syscalls, "syscall", "s", nil, "system call to time (repeatable)")
	fl.StringArrayVarP(&f.kfuncs, "kernel", "k", nil, "kernel function to time (repeatable)")
	fl.IntVarP(&f.pid, "pid", "p", 0, "process to attach to")
	fl.StringVar(&f.clock, "clock", "", "jiffies, tick:DUR or ns (default: ns for -u, jiffies for -s/-k)")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (0: until the target exits, the precision is reached or Ctrl-C)")
	fl.StringVar(&f.precision, "precision", "", "stop when every interval's half-width is at most this share of its mean (e.g. 5%; after 30 polls at least)")
	fl.StringVar(&f.confidence, "confidence", "95%", "confidence level of the intervals")
	fl.StringVar(&f.jsonOut, "json", "", "write the results as JSON to `FILE`")
	fl.StringVarP(&f.pprofOut, "output", "o", "", "write a pprof profile to `FILE` (.pb.gz)")
	fl.BoolVar(&f.validate, "validate", false, "also read the ns clock and report whether each tick-clock interval covers the exact mean")
	fl.IntVar(&f.maxProbes, "max-probes", 256, "most functions one glob may expand to")
	fl.DurationVar(&f.interval, "interval", 200*time.Millisecond, "counter polling period (one batch each)")
	fl.StringVar(&f.attach, "attach", "auto", "how -k functions are probed: auto, kprobe or fentry")
	fl.BoolVar(&f.noCorrect, "no-correct", false, "do not subtract the calibrated probe overhead (show raw means only)")
	return cmd
}

// timeSetup is the validated form of the flags.
type timeSetup struct {
	clock     loader.Clock
	exact     bool
	precision float64 // 0: none
	est       estimate.Options
	interval  time.Duration // the polling period (one batch each)
}

func parseTimeFlags(f timeFlags, argv []string) (timeSetup, error) {
	var ts timeSetup
	if len(f.users)+len(f.syscalls)+len(f.kfuncs) == 0 {
		return ts, usagef("no target: give at least one -u SYMBOL, -s SYSCALL or -k FUNC")
	}
	if f.pid != 0 && len(argv) > 0 {
		return ts, usagef("give either -p PID or -- CMD, not both")
	}
	if f.pid < 0 {
		return ts, usagef("-p %d: a process ID is positive", f.pid)
	}
	if f.maxProbes < 1 {
		return ts, usagef("--max-probes %d: want at least 1", f.maxProbes)
	}
	if f.interval < 10*time.Millisecond || f.interval > time.Hour {
		return ts, usagef("--interval %s: want 10ms to 1h", f.interval)
	}
	if f.attach != "" {
		if _, err := loader.ParseAttachMode(f.attach); err != nil {
			return ts, usagef("--attach: %v", err)
		}
	}
	if err := checkOutput("--json", f.jsonOut); err != nil {
		return ts, err
	}
	if err := checkOutput("-o", f.pprofOut); err != nil {
		return ts, err
	}
	if f.duration < 0 {
		return ts, usagef("--duration %s: want a positive duration", f.duration)
	}
	conf, err := parseConfidence(f.confidence)
	if err != nil {
		return ts, usagef("--confidence: %v", err)
	}
	ts.est = estimate.Options{Confidence: conf}
	ts.interval = f.interval
	if f.precision != "" {
		p, err := parsePercent(f.precision)
		if err != nil || !(p > 0 && p < 1) {
			return ts, usagef("--precision %q: want a relative half-width such as 5%%", f.precision)
		}
		ts.precision = p
	}
	if f.clock == "" {
		ts.clock = defaultClock(len(f.users) > 0, f.validate)
	} else {
		ts.clock, err = loader.ParseClock(f.clock)
		if err != nil {
			return ts, usagef("--clock: %v", err)
		}
	}
	if f.validate {
		if ts.clock.Kind == loader.ClockNS {
			return ts, usagef("--validate checks a tick clock against ns: give --clock jiffies or tick:DUR")
		}
		ts.exact = true
	}
	return ts, nil
}

// defaultClock picks the clock when --clock is not given. User functions:
// ns, because a uprobe pair costs microseconds here, next to which the
// ~24 ns clock reads are noise, and an exact clock reaches a precision with
// orders of magnitude fewer calls than a coarse one (tick crossings need
// about z^2 d/(ET e^2) calls). Syscalls and kernel functions only (no -u):
// jiffies, because there the clock reads are a large share of a ~130 ns
// probe pair and calls are plentiful. --validate needs a tick clock:
// jiffies.
func defaultClock(user, validate bool) loader.Clock {
	if user && !validate {
		return loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}
	}
	return loader.Clock{Kind: loader.ClockJiffies}
}

// resolveTargets turns the target flags into loader specs.
func resolveTargets(f timeFlags, pid int) ([]loader.Spec, error) {
	var specs []loader.Spec
	for _, u := range f.users {
		s, err := loader.ResolveUser(pid, u, f.maxProbes)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	for _, a := range f.syscalls {
		s, err := loader.ResolveSyscall(a, loader.SyscallAuto)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	if len(f.kfuncs) > 0 {
		mode, err := loader.ParseAttachMode(f.attach)
		if err != nil {
			return nil, usagef("--attach: %v", err)
		}
		s, err := loader.ResolveKernelFuncs(f.kfuncs, mode)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	specs = dedupeSpecs(specs)
	for _, s := range specs {
		if s.Kind == loader.KindGoUser && !loader.Supported(loader.KindGoUser) {
			return nil, fmt.Errorf("%s %w", s.Binary, loader.ErrGoBinary)
		}
		if !loader.Supported(s.Kind) {
			return nil, fmt.Errorf("%s targets (%s) are %w yet: `tickprof doctor` shows what this build and kernel support", s.Kind, s.Name, loader.ErrKindUnsupported)
		}
	}
	return specs, nil
}

// dedupeSpecs drops targets that name a function already given (an alias,
// or a glob and a name that overlap): two probes at one address fire in
// the same order at entry and at exit, which is not how calls nest.
func dedupeSpecs(specs []loader.Spec) []loader.Spec {
	type key struct {
		kind      loader.Kind
		dev, ino  uint64
		file, sym string
		off, arg  uint64
	}
	seen := map[key]bool{}
	out := specs[:0]
	for _, s := range specs {
		k := key{kind: s.Kind, off: s.Offset, arg: s.Arg}
		if s.Binary != "" {
			var st syscall.Stat_t
			if err := syscall.Stat(s.Binary, &st); err == nil {
				k.dev, k.ino = st.Dev, st.Ino
			} else {
				k.file = s.Binary
			}
		} else {
			k.sym = s.Symbol
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

func runTime(ctx context.Context, out, errOut io.Writer, f timeFlags, argv []string) error {
	ts, err := parseTimeFlags(f, argv)
	if err != nil {
		return err
	}
	if err := loader.CheckPrivileges(); err != nil {
		return err
	}
	pid := f.pid
	var held *loader.Held
	if len(argv) > 0 {
		held, err = loader.StartHeld(argv)
		if err != nil {
			return err
		}
		pid = held.Pid
		defer func() {
			held.Release() // a no-op unless an error came before the release
		}()
	} else if pid != 0 {
		if err := loader.CheckAccess(pid); err != nil {
			return err
		}
	}
	fail := func(err error) error {
		if held != nil {
			held.Kill()
			held.Wait()
		}
		return err
	}
	specs, err := resolveTargets(f, pid)
	if err != nil {
		return fail(err)
	}
	corr := loadCorrection(f, specs, errOut)
	s, err := loader.Open(loader.Options{Clock: ts.clock, Exact: ts.exact, PID: pid}, specs)
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	inlined := goInlined(s, errOut)
	clk := s.Clock()
	where := "every process"
	if pid != 0 {
		where = fmt.Sprintf("process %d", pid)
	}
	fmt.Fprintf(errOut, "tickprof: timing %d target(s) in %s with clock %s (d = %s); Ctrl-C to stop\n",
		len(s.Targets()), where, clk, formatNs(clk.Resolution()))
	start := time.Now()
	if held != nil {
		held.Release()
	}

	prog := newProgress(errOut)
	var exited <-chan struct{}
	if held != nil {
		exited = held.Done()
	}
	var deadline <-chan time.Time
	if f.duration > 0 {
		t := time.NewTimer(f.duration)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	reason := ""
	var lastGood *loader.Poll // the last poll that read every counter
	for reason == "" {
		select {
		case <-ctx.Done():
			reason = "interrupted"
		case <-deadline:
			reason = "duration reached"
		case <-exited:
			reason = "target exited"
		case <-tick.C:
			p, err := s.Poll()
			if err != nil {
				// Stop, and still report what the last good read holds.
				reason = "error: " + err.Error()
				break
			}
			lastGood = &p
			rows := estimateAll(s, p, ts)
			prog.update(p.Elapsed, rows, ts)
			if ts.precision > 0 && allReached(rows, ts.precision) {
				reason = "precision reached"
			}
			if reason == "" && held == nil && pid != 0 && loader.CheckProcess(pid) != nil {
				reason = "target exited"
			}
		}
	}
	s.Stop()
	p, err := s.Poll()
	prog.clear()
	if err != nil {
		if lastGood == nil {
			return fmt.Errorf("%w: nothing was read to report; check `tickprof doctor`", err)
		}
		// The batches end with the last good poll: report that.
		fmt.Fprintf(errOut, "tickprof: warning: the final read failed (%v): reporting the poll at %.1fs\n", err, lastGood.Elapsed.Seconds())
		p = *lastGood
	}
	if held != nil && reason != "target exited" {
		// Timing is over: end the command we started.
		syscall.Kill(held.Pid, syscall.SIGTERM)
		select {
		case <-held.Done():
		case <-time.After(2 * time.Second):
			held.Kill()
		}
	}
	run := buildRun(s, p, ts, start, reason, pid, argv)
	for i := range run.Targets {
		run.Targets[i].InlinedInto = inlined[run.Targets[i].Name]
	}
	corr.apply(run, errOut)
	if err := writeTimeTable(out, run, ts.precision); err != nil {
		return err
	}
	var errs []string
	if f.jsonOut != "" {
		if err := export.WriteTimeJSONFile(f.jsonOut, run); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if f.pprofOut != "" {
		if err := export.WriteTimeProfile(f.pprofOut, run); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		// One line: the table above holds the results all the same.
		return fmt.Errorf("%s (the results are in the table above; check the output path)", strings.Join(errs, "; "))
	}
	return nil
}

// goInlined warns, one line per Go target, about the functions it was also
// inlined into (those calls run none of its own code and are not counted),
// and returns them by target name.
func goInlined(s *loader.Session, errOut io.Writer) map[string][]string {
	g, err := s.GoStats()
	if err != nil {
		fmt.Fprintf(errOut, "tickprof: warning: %v\n", err)
	}
	out := map[string][]string{}
	for _, site := range g.Sites {
		if len(site.InlinedInto) == 0 {
			continue
		}
		out[site.Target] = site.InlinedInto
		into := site.InlinedInto
		if len(into) > 3 {
			into = append(into[:3:3], fmt.Sprintf("%d more", len(site.InlinedInto)-3))
		}
		fmt.Fprintf(errOut, "tickprof: warning: %s is also inlined into %s: those calls run no probe and are not counted (mark it //go:noinline to count them)\n",
			site.Target, strings.Join(into, ", "))
	}
	return out
}

// correction subtracts the probe overhead measured by `tickprof calibrate`
// (Lilja 6.2.1): T_e = T_m - T_ovhd, the overhead's uncertainty carried
// into the interval.
type correction struct {
	cal   *calibrate.Calibration // nil: no correction
	mode  string                 // export.TimeRun.Correction: "on", "off", "none"
	kinds []string               // per spec, its calibrated probe kind ("": none)
}

// loadCorrection finds this machine's calibration, unless --no-correct,
// and the probe kind of every spec (read now: a process's executable can
// no longer be read once it has exited). A calibration that cannot be
// read is reported and left out.
func loadCorrection(f timeFlags, specs []loader.Spec, errOut io.Writer) correction {
	if f.noCorrect {
		return correction{mode: "off"}
	}
	var cal *calibrate.Calibration
	var err error
	if f.calDir != "" {
		m, merr := calibrate.ThisMachine()
		if merr != nil {
			err = merr
		} else {
			cal, err = calibrate.LoadFrom(f.calDir, m)
		}
	} else {
		cal, err = calibrate.Load()
	}
	if err != nil {
		if !errors.Is(err, calibrate.ErrNoCalibration) {
			fmt.Fprintf(errOut, "tickprof: warning: %v; means are not corrected for the probe overhead\n", err)
		}
		return correction{mode: "none"}
	}
	c := correction{cal: cal, mode: "on", kinds: make([]string, len(specs))}
	for i, sp := range specs {
		kind, err := overheadKind(sp)
		if err != nil {
			fmt.Fprintf(errOut, "tickprof: warning: %s: %v; its mean includes the probe overhead\n", sp.Name, err)
			continue
		}
		c.kinds[i] = kind
	}
	return c
}

// overheadKind is the calibrated probe kind whose overhead is subtracted
// from a target, or "" when none is. Syscalls and kernel functions are not
// corrected: there is no empty syscall or kernel function, so what
// `tickprof calibrate` measures for them (getppid's whole path) includes
// the kernel's own work, and subtracting it would remove real time.
func overheadKind(sp loader.Spec) (string, error) {
	switch sp.Kind {
	case loader.KindUser:
		return calibrate.UserProbeKind(sp.Binary, sp.Offset)
	case loader.KindGoUser:
		return "go", nil
	case loader.KindSyscall, loader.KindKernelFunc:
		return "", nil
	}
	return "", fmt.Errorf("no overhead calibration applies to %s targets", sp.Kind)
}

// apply corrects every target's estimate in run (in the order of the
// specs given to loadCorrection) and sets run.Correction; a target whose
// probe kind was not calibrated keeps its raw mean, with a warning.
func (c correction) apply(run *export.TimeRun, errOut io.Writer) {
	run.Correction = c.mode
	for i := range run.Targets {
		t := &run.Targets[i]
		t.Raw = t.Estimate
		if c.cal == nil || t.Err != "" || i >= len(c.kinds) || c.kinds[i] == "" {
			continue
		}
		kind := c.kinds[i]
		o, ok := c.cal.Overhead(kind)
		if !ok {
			fmt.Fprintf(errOut, "tickprof: warning: the calibration has no %q probe overhead, so %s's mean includes it: run `tickprof calibrate` again\n", kind, t.Name)
			continue
		}
		r, err := calibrate.Correct(t.Estimate, o)
		if err != nil {
			fmt.Fprintf(errOut, "tickprof: warning: %s: %v; its mean includes the probe overhead\n", t.Name, err)
			continue
		}
		t.Estimate, t.Corrected, t.OverheadKind = r, true, kind
		t.Overhead = o.At(t.Raw.Confidence)
	}
}

// targetRow is one target's current estimate.
type targetRow struct {
	name    string
	calls   uint64
	res     estimate.Result
	err     error
	counts  estimate.Counts
	exact   bool
	batches int // polling batches with calls
}

// estimateAll estimates every target from a poll.
func estimateAll(s *loader.Session, p loader.Poll, ts timeSetup) []targetRow {
	rows := make([]targetRow, len(p.Totals))
	for i, c := range p.Totals {
		rows[i] = estimateTarget(s.Clock(), c, s.Batches(i), ts)
		rows[i].name = s.Targets()[i].Name
	}
	return rows
}

// minCheckBatches is the number of polling batches below which the table
// warns that the batch-means interval, which accounts for correlated calls,
// could not be formed or rests on too little.
const minCheckBatches = 10

// estimateTarget estimates one target from its cumulative counters c and
// its polling batches.
func estimateTarget(clk loader.Clock, c loader.Counters, batches []loader.Counters, ts timeSetup) targetRow {
	r := targetRow{calls: c.Calls}
	r.counts, r.batches = loader.EstimatorCounts(clk, c, batches)
	if clk.Kind == loader.ClockNS {
		// Exact measurements: the mean of the ns durations (Lilja 4.4.1),
		// or the batch-means interval over the polling batches when that
		// is wider (successive calls can be correlated, Beilner eq. 11).
		r.exact = true
		r.res, r.err = estimate.MeanFromSums(c.Calls, float64(c.NsSum), c.NsSq.Float64(), ts.est)
		if r.err == nil {
			b, err := estimate.Time(r.counts, ts.est)
			if err == nil && b.Batches >= 2 {
				if b.High-b.Low > r.res.High-r.res.Low {
					r.res = b
				} else {
					// The reported interval still rests on both.
					r.res.Batches = b.Batches
				}
			}
		}
		return r
	}
	r.res, r.err = estimate.Time(r.counts, ts.est)
	return r
}

// precisionReached is the --precision stopping rule (DESIGN.md "Intervals";
// estimate.Reached): the interval is within rel, rests on at least
// estimate.MinStopEvents events, and on at least estimate.MinStopBatches
// polling batches with calls. The batch count is required whichever
// interval is reported: the batch-means interval is the check against
// correlated calls (Beilner eq. 11), and from a few batches it can be
// narrower than the per-call interval by luck, then far wider one poll
// later (t with 1 degree of freedom is 12.7), so stopping before it has
// 30 batches reports a loose interval.
func precisionReached(r targetRow, rel float64) bool {
	return r.err == nil && r.batches >= estimate.MinStopBatches && estimate.Reached(r.res, rel)
}

func allReached(rows []targetRow, rel float64) bool {
	for _, r := range rows {
		if !precisionReached(r, rel) {
			return false
		}
	}
	return len(rows) > 0
}

// remaining estimates the time still needed to reach rel at the current
// call rate (0 when reached, -1 when unknown): enough calls for the
// interval, and enough polling batches for the stopping rule.
func remaining(r targetRow, rel float64, elapsed time.Duration, ts timeSetup) time.Duration {
	if r.err != nil || r.calls == 0 || elapsed <= 0 {
		return -1
	}
	if precisionReached(r, rel) {
		return 0
	}
	var more float64
	if r.exact {
		n := float64(r.calls)
		more = math.Max(n*(r.res.RelHalfWidth/rel)*(r.res.RelHalfWidth/rel)-n, 0)
		more = math.Max(more, float64(estimate.MinStopEvents)-n)
	} else {
		m, err := estimate.MoreCalls(r.counts, rel, ts.est)
		if err != nil {
			return -1
		}
		more = float64(m)
	}
	rate := float64(r.calls) / elapsed.Seconds()
	secs := more / rate
	if b := estimate.MinStopBatches - r.batches; b > 0 {
		secs = math.Max(secs, float64(b)*ts.interval.Seconds())
	}
	if secs > 1e7 {
		secs = 1e7
	}
	return time.Duration(secs * float64(time.Second))
}

// buildRun gathers the final results for the table and the exporters.
func buildRun(s *loader.Session, p loader.Poll, ts timeSetup, start time.Time, reason string, pid int, argv []string) *export.TimeRun {
	clk := s.Clock()
	run := &export.TimeRun{
		Clock: clk.String(), Resolution: clk.Resolution(), Confidence: ts.est.Confidence,
		Start: start, Duration: time.Since(start), PID: pid, Command: argv, StopReason: reason,
		Validate:  ts.exact && clk.Kind != loader.ClockNS,
		RingDrops: p.Stats.RingDrops, StackFails: p.Stats.StackFails,
	}
	inflight, _ := s.InFlight()
	callers := s.Callers()
	for i, c := range p.Totals {
		tg := s.Targets()[i]
		if tg.Spec.Kind == loader.KindGoUser && run.Go == nil {
			if g, err := s.GoStats(); err == nil {
				run.Go = &export.GoStats{Morestack: g.Morestack, Expired: g.Expired, NoGoroutine: g.NoGoroutine}
			}
		}
		row := estimateTarget(clk, c, s.Batches(i), ts)
		t := export.TimeTarget{
			Name: tg.Name, Kind: tg.Spec.Kind.String(), Binary: tg.Spec.File,
			Calls: c.Calls, Ticks: c.Ticks, Estimate: row.res,
			Orphans: c.Orphans, Crossings: c.Crossings,
		}
		if i < len(inflight) {
			t.Orphans += inflight[i]
		}
		if row.err != nil {
			t.Err = row.err.Error()
		}
		var recs uint64
		for _, cl := range callers {
			if cl.Target != i {
				continue
			}
			recs += cl.Records
			tc := export.TimeCaller{Calls: cl.Records, Ticks: cl.Ticks}
			for _, fr := range cl.Stack {
				tc.Frames = append(tc.Frames, export.Frame{Func: fr.Func, File: fr.File, Addr: fr.PC})
			}
			t.Callers = append(t.Callers, tc)
		}
		t.Dropped = subFloor(c.Crossings, recs)
		if clk.Kind == loader.ClockNS {
			scaleCallers(t.Callers, c.Ticks)
		}
		if ts.exact || clk.Kind == loader.ClockNS {
			x := &export.ExactNs{Sum: c.NsSum, Min: c.NsMin, Max: c.NsMax, Hist: append([]uint64(nil), c.Hist[:]...)}
			if m, err := estimate.MeanFromSums(c.Calls, float64(c.NsSum), c.NsSq.Float64(), ts.est); err == nil {
				x.Mean = m
			}
			t.Exact = x
			if run.Validate && row.err == nil && c.Calls > 0 {
				// Both sides as measured: the check is on the clock and
				// the estimator, before any overhead correction.
				exact := float64(c.NsSum) / float64(c.Calls)
				cov := row.res.Low <= exact && exact <= row.res.High
				t.Covered = &cov
			}
		}
		run.Targets = append(run.Targets, t)
	}
	return run
}

// scaleCallers spreads a target's exact total (ns) over its callers in
// proportion to their record-grid estimates (ns clock: a record per grid
// line a call spans, so the estimates are unbiased shares but do not add
// up to the exact total).
func scaleCallers(cs []export.TimeCaller, total uint64) {
	var sum uint64
	for _, c := range cs {
		sum += c.Ticks
	}
	if sum == 0 {
		return
	}
	var given uint64
	for i := range cs {
		cs[i].Ticks = uint64(float64(cs[i].Ticks) / float64(sum) * float64(total))
		given += cs[i].Ticks
	}
	// Rounding: the remainder goes to the largest caller (the first).
	cs[0].Ticks += subFloor(total, given)
}

// subFloor returns a-b, or 0 when b > a.
func subFloor(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// fmtMeanIv formats a mean with its interval: "1.23µs [1.20µs, 1.26µs]".
func fmtMeanIv(r estimate.Result) string {
	m, lo, hi := formatInterval(r.Mean, r.Low, r.High)
	return m + " [" + lo + ", " + hi + "]"
}

// writeTimeTable prints the results: one row per target, then the run.
func writeTimeTable(w io.Writer, r *export.TimeRun, precision float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	conf := formatPercent(r.Confidence)
	corrected := false
	for _, t := range r.Targets {
		corrected = corrected || t.Corrected
	}
	hdr := "TARGET\tCALLS\tMEAN\tINTERVAL (" + conf + ")\t±%\t"
	if corrected {
		hdr += "RAW MEAN [" + conf + "]\tOVERHEAD [" + conf + "]\t"
	}
	hdr += "METHOD\tCROSSINGS\tORPHANS\tDROPPED\t"
	if r.Validate {
		hdr += "EXACT MEAN [" + conf + "]\tCOVERED\t"
	}
	fmt.Fprintln(tw, hdr)
	for i := range r.Targets {
		t := &r.Targets[i]
		var mean, iv, pct, method string
		if t.Err != "" {
			mean, iv, pct, method = "-", "no estimate: "+shortErr(t.Err), "-", "-"
		} else {
			m, lo, hi := formatInterval(t.Estimate.Mean, t.Estimate.Low, t.Estimate.High)
			mean, iv = m, "["+lo+", "+hi+"]"
			pct = "±" + formatPercent(t.Estimate.RelHalfWidth)
			if math.IsInf(t.Estimate.RelHalfWidth, 0) || math.IsNaN(t.Estimate.RelHalfWidth) {
				pct = "-" // a zero mean: only the upper bound says something
			}
			method = t.Estimate.Method
		}
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t", t.Name, t.Calls, mean, iv, pct)
		if corrected {
			raw, ov := "-", "-"
			if t.Err == "" {
				raw = fmtMeanIv(t.Raw)
			}
			if t.Corrected {
				ov = fmtMeanIv(t.Overhead)
			}
			line += raw + "\t" + ov + "\t"
		}
		line += fmt.Sprintf("%s\t%d\t%d\t%d\t", method, t.Crossings, t.Orphans, t.Dropped)
		if r.Validate {
			ex, cov := "-", "-"
			if t.Exact != nil && t.Exact.Mean.Calls > 0 {
				ex = fmtMeanIv(t.Exact.Mean)
			}
			if t.Covered != nil {
				cov = map[bool]string{true: "yes", false: "NO"}[*t.Covered]
			}
			line += ex + "\t" + cov + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "clock %s (d = %s), %s confidence, %.1fs, stopped: %s", r.Clock, formatNs(r.Resolution), conf, r.Duration.Seconds(), r.StopReason)
	if precision > 0 {
		fmt.Fprintf(w, ", precision goal ±%s", formatPercent(precision))
	}
	fmt.Fprintf(w, "; dropped records %d, stack failures %d\n", r.RingDrops, r.StackFails)
	if g := r.Go; g != nil {
		fmt.Fprintf(w, "Go: %d entry firings skipped for stack growth (counted on re-entry), %d entries expired without a RET (panic or Goexit, counted as orphans)",
			g.Morestack, g.Expired)
		if g.NoGoroutine > 0 {
			fmt.Fprintf(w, ", %d firings without a readable goroutine", g.NoGoroutine)
		}
		fmt.Fprintln(w)
	}
	var few []string
	for _, t := range r.Targets {
		if t.Calls > 0 && t.Estimate.Batches < minCheckBatches {
			few = append(few, t.Name)
		}
	}
	if len(few) > 0 {
		fmt.Fprintf(w, "note: %s: fewer than %d polling batches, too few to check whether calls that overlap in time (several threads or goroutines in the function at once, crossing the same ticks) make the interval too narrow (Beilner eq. 11); time for at least %d x --interval, or shorten --interval\n",
			strings.Join(few, ", "), minCheckBatches, minCheckBatches)
	}
	for _, t := range r.Targets {
		if r.Correction == "on" && (t.Kind == loader.KindSyscall.String() || t.Kind == loader.KindKernelFunc.String()) {
			fmt.Fprintln(w, "syscall and kernel-function means are as measured: they include the tracepoint or probe dispatch inside the window (no empty kernel path exists to calibrate it against)")
			break
		}
	}
	switch {
	case corrected:
		fmt.Fprintln(w, "MEAN is the measured (RAW) mean minus the calibrated probe overhead, both uncertainties in its interval; --no-correct shows raw means only")
	case r.Correction == "off":
		fmt.Fprintln(w, "means include tickprof's probe overhead (--no-correct)")
	case r.Correction == "none":
		fmt.Fprintln(w, "note: these means include tickprof's probe overhead; run `sudo tickprof calibrate` once and later runs subtract it")
	}
	return nil
}

func shortErr(s string) string {
	if i := strings.IndexByte(s, ':'); i > 0 && i < 40 {
		return s[:i]
	}
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// stdIsTerminal reports whether w is a terminal.
func stdIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
