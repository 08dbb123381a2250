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

func newTimeCmd() *cobra.Command {
	var f timeFlags
	cmd := &cobra.Command{
		Use:     "time [flags] (-p PID | -- CMD ARGS...)",
		Short:   "Time functions and kernel paths, each mean with its confidence interval",
		Long:    help("time"),
		Example: help("time.example"),
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
	fl.StringVar(&f.overhead, "overhead", "", "budget `PCT` on the target's slowdown (e.g. 1%): probe in random windows at the duty cycle that holds it (-u native functions; needs a calibration of this machine)")
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
	ts := timeSetup{interval: f.interval}
	conf, confErr := parseConfidence(f.confidence)
	if err := firstErr(
		usageIf(len(f.users)+len(f.syscalls)+len(f.kfuncs) == 0, "no target: give at least one -u SYMBOL, -s SYSCALL or -k FUNC"),
		usageIf(f.pid != 0 && len(argv) > 0, "give either -p PID or -- CMD, not both"),
		usageIf(f.pid < 0, "-p %d: a process ID is positive", f.pid),
		usageIf(f.maxProbes < 1, "--max-probes %d: want at least 1", f.maxProbes),
		usageIf(f.interval < 10*time.Millisecond || f.interval > time.Hour, "--interval %s: want 10ms to 1h", f.interval),
		attachErr(f.attach),
		checkOutput("--json", f.jsonOut),
		checkOutput("-o", f.pprofOut),
		usageIf(f.duration < 0, "--duration %s: want a positive duration", f.duration),
		confErr,
	); err != nil {
		return ts, err
	}
	ts.est = estimate.Options{Confidence: conf}
	var err error
	if ts.precision, err = fractionFlag("--precision", f.precision, "a relative half-width such as 5%"); err != nil {
		return ts, err
	}
	if ts.overhead, err = fractionFlag("--overhead", f.overhead, "a slowdown budget such as 1%"); err != nil {
		return ts, err
	}
	if err := firstErr(
		usageIf(f.overhead != "" && len(f.syscalls)+len(f.kfuncs) > 0, "--overhead applies to -u functions only"),
		usageIf(f.overhead != "" && f.noCorrect, "--overhead needs the calibrated probe cost: drop --no-correct"),
		usageIf(f.window < 0, "--window %s: want a positive duration", f.window),
	); err != nil {
		return ts, err
	}
	ts.clock = timing.DefaultClock(len(f.users) > 0, f.validate)
	if f.clock != "" {
		if ts.clock, err = loader.ParseClock(f.clock); err != nil {
			return ts, usagef("--clock: %v", err)
		}
	}
	ts.exact = f.validate
	return ts, usageIf(f.validate && ts.clock.Kind == loader.ClockNS, "--validate checks a tick clock against ns: give --clock jiffies or tick:DUR")
}

// attachErr checks --attach.
func attachErr(mode string) error {
	if mode == "" {
		return nil
	}
	_, err := loader.ParseAttachMode(mode)
	return usageIf(err != nil, "--attach: %v", err)
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
