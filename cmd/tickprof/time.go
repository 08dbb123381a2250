package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/timing"
	"github.com/tickprof/tickprof/units"
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
	quantiles, precisionOf  string
	quantilesSet            bool
	overhead                string
	window                  time.Duration
	// calDir is where the machine's calibration is looked up; "" means
	// calibrate.Dir() (tests point it at a directory of their own).
	calDir string
}

// timeHelp is the help text of the command.
const timeHelp = `time attaches to functions of a running process (-p PID) or of a command it
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

Clocks (--clock): jiffies (the kernel tick, period measured; a random share
of calls is also timed exactly, and a tick-coupled program is warned about),
tick:DUR (monotonic time quantized to DUR on a grid shifted by a random
phase for every call, so that it cannot keep time with the program), ns
(exact). The default is ns for user functions and jiffies for syscalls and
kernel functions (see README).

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
--precision applies to the measured interval.`

func newTimeCmd() *cobra.Command {
	var f timeFlags
	cmd := &cobra.Command{
		Use:   "time [flags] (-p PID | -- CMD ARGS...)",
		Short: "Time functions and kernel paths, each mean with its confidence interval",
		Long:  timeHelp,
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
	fl.BoolVar(&f.validate, "validate", false, "also read the ns clock on every call and report whether each tick-clock interval holds the exact mean of the same calls (a check of the clock's quantization on these calls, not of the long-run mean)")
	fl.IntVar(&f.maxProbes, "max-probes", 256, "most functions one glob may expand to")
	fl.DurationVar(&f.interval, "interval", 200*time.Millisecond, "counter polling period (one batch each)")
	fl.StringVar(&f.attach, "attach", "auto", "how -k functions are probed: auto, kprobe or fentry")
	fl.BoolVar(&f.noCorrect, "no-correct", false, "do not subtract the calibrated probe overhead (show raw means only)")
	fl.StringVar(&f.quantiles, "quantiles", "50,90,99,99.9", "quantiles (percent) with their intervals, exact clock only; none to turn off")
	fl.StringVar(&f.precisionOf, "precision-of", "mean", "what --precision applies to: mean, or a quantile such as p99")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) { f.quantilesSet = cmd.Flags().Changed("quantiles") }
	fl.StringVar(&f.overhead, "overhead", "", "budget `PCT` on the target's slowdown (e.g. 1%): probe in random windows at the duty cycle that holds it (-u functions, native and Go, and -s; needs a calibration of this machine)")
	fl.DurationVar(&f.window, "window", 0, "window length under --overhead (default 50ms)")
	return cmd
}

// timeSetup is the validated form of the flags.
type timeSetup struct {
	clock     loader.Clock
	exact     bool
	precision float64 // 0: none
	est       estimate.Options
	interval  time.Duration // the polling period (one batch each)
	overhead  float64       // 0: no budget
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
	conf, err := units.ParseConfidence(f.confidence)
	if err != nil {
		return ts, usagef("--confidence: %v", err)
	}
	ts.est = estimate.Options{Confidence: conf}
	ts.interval = f.interval
	if f.precision != "" {
		p, err := units.ParsePercent(f.precision)
		if err != nil || !(p > 0 && p < 1) {
			return ts, usagef("--precision %q: want a relative half-width such as 5%%", f.precision)
		}
		ts.precision = p
	}
	if f.overhead != "" {
		p, err := units.ParsePercent(f.overhead)
		if err != nil || !(p > 0 && p < 1) {
			return ts, usagef("--overhead %q: want a slowdown budget such as 1%%", f.overhead)
		}
		if len(f.kfuncs) > 0 {
			return ts, usagef("--overhead applies to -u functions and -s system calls only")
		}
		if f.noCorrect {
			return ts, usagef("--overhead needs the calibrated probe cost: drop --no-correct")
		}
		ts.overhead = p
	}
	if f.window < 0 {
		return ts, usagef("--window %s: want a positive duration", f.window)
	}
	if f.clock == "" {
		ts.clock = timing.DefaultClock(len(f.users) > 0, f.validate)
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

func runTime(ctx context.Context, out, errOut io.Writer, f timeFlags, argv []string) error {
	cfg, err := timeConfig(f, argv)
	if err != nil {
		return err
	}
	if err := loader.CheckPrivileges(); err != nil {
		return err
	}
	cfg.Corrector, cfg.Correction = loadCorrector(f, errOut)
	_, err = runTiming(ctx, errOut, cfg, func(run *timing.Result) error {
		return export.WriteTimeOutputs(out, run, cfg.Precision, f.jsonOut, f.pprofOut)
	})
	if errors.Is(err, proc.ErrNeedProcess) {
		return usagef("%v: add -p PID or -- CMD", err)
	}
	return err
}

// runTiming runs a timing session, saying on errOut what it times and
// showing its progress there, calls write with the result and then
// detaches the probes.
func runTiming(ctx context.Context, errOut io.Writer, cfg timing.Config, write func(*timing.Result) error) (*timing.Result, error) {
	cfg.Warn = func(msg string) { fmt.Fprintf(errOut, "tickprof: warning: %s\n", msg) }
	cfg.DetachHelper = detachHelper
	s, err := timing.OpenContext(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	clk := s.Clock()
	where := "every process"
	if s.PID() != 0 {
		where = fmt.Sprintf("process %d", s.PID())
	}
	fmt.Fprintf(errOut, "tickprof: timing %d target(s) in %s with clock %s (d = %s); Ctrl-C to stop\n",
		len(s.Targets()), where, clk, units.Ns(clk.Resolution()))
	prog := export.NewProgress(errOut)
	run, err := s.Run(ctx, prog.Update)
	prog.Clear()
	if err != nil {
		return nil, err
	}
	// The results are written before the probes come off (a large probe
	// set takes a while to detach, and nothing is lost if tickprof is
	// killed meanwhile).
	werr := write(run)
	detach(s, errOut)
	return run, werr
}

// timeConfig validates the flags into a timing configuration.
func timeConfig(f timeFlags, argv []string) (timing.Config, error) {
	ts, err := parseTimeFlags(f, argv)
	if err != nil {
		return timing.Config{}, err
	}
	cfg := timing.Config{PID: f.pid, Command: argv, Clock: ts.clock, Exact: ts.exact, Estimate: ts.est,
		Interval: ts.interval, Duration: f.duration, Precision: ts.precision, Overhead: ts.overhead, Window: f.window,
		Targets: timing.Targets{Users: f.users, Syscalls: f.syscalls, Kernel: f.kfuncs, MaxProbes: f.maxProbes}}
	if err := quantileConfig(&cfg, f.quantiles, f.quantilesSet, f.precisionOf); err != nil {
		return cfg, err
	}
	if len(f.kfuncs) > 0 {
		if cfg.Targets.KernelAttach, err = loader.ParseAttachMode(f.attach); err != nil {
			return cfg, usagef("--attach: %v", err)
		}
	}
	return cfg, nil
}

// loadCorrector finds this machine's calibration, unless --no-correct. A
// calibration that cannot be read is reported and left out.
func loadCorrector(f timeFlags, errOut io.Writer) (timing.Corrector, timing.CorrectionMode) {
	if f.noCorrect {
		return nil, timing.CorrectionOff
	}
	c, err := calibrate.LoadCorrector(f.calDir)
	if err != nil {
		if !errors.Is(err, calibrate.ErrNoCalibration) {
			fmt.Fprintf(errOut, "tickprof: warning: %v; means are not corrected for the probe overhead\n", err)
		}
		return nil, timing.CorrectionNone
	}
	return c, timing.CorrectionOn
}
