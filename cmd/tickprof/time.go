// SPDX-License-Identifier: Apache-2.0

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
	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/console"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/timing"
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
	maxProbes, userStack    int
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
	cmd := command("time", "time [flags] (-p PID | -- CMD ARGS...)", "Time functions and kernel paths, each mean with its confidence interval", func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return runTime(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f, args)
	})
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		return cli.UsageIf(len(args) > 0 && cmd.ArgsLenAtDash() != 0, "unexpected argument %q: put the command to run after --", cli.FirstArg(args))
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.users, "user", "u", nil, "user function: SYMBOL, LIB:SYMBOL, PATH:SYMBOL or a glob; a USDT pair usdt:[BINARY:]PROVIDER:ENTRY,RETURN; a Python function py:[MODULE.]FUNCTION (repeatable)")
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
	fl.IntVar(&f.userStack, "user-stack", symbolize.MaxStackBytes, "copy `BYTES` of user stack per crossing record of a -u function to unwind its caller stack by call frame information (0: frame pointers only)")
	fl.DurationVar(&f.interval, "interval", 200*time.Millisecond, "counter polling period (one batch each)")
	fl.StringVar(&f.attach, "attach", "auto", "how -k functions are probed: auto, kprobe or fentry")
	fl.BoolVar(&f.noCorrect, "no-correct", false, "do not subtract the calibrated probe overhead (show raw means only)")
	fl.StringVar(&f.quantiles, "quantiles", "50,90,99,99.9", "quantiles (percent) with their intervals, exact clock only; none to turn off")
	fl.StringVar(&f.precisionOf, "precision-of", "mean", "what --precision applies to: mean, or a quantile such as p99")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) { f.quantilesSet = cmd.Flags().Changed("quantiles") }
	fl.StringVar(&f.overhead, "overhead", "", "budget `PCT` on the target's slowdown (e.g. 1%): probe in random windows at the duty cycle that holds it (-u, -s and -k; needs a calibration of this machine)")
	fl.DurationVar(&f.window, "window", 0, "window length under --overhead (default 50ms)")
	return cmd
}

func runTime(ctx context.Context, out, errOut io.Writer, f timeFlags, argv []string) error {
	cfg, err := parseTimeFlags(f, argv)
	if err != nil {
		return err
	}
	if err := loader.CheckPrivileges(); err != nil {
		return err
	}
	deferTimeGC()
	cfg.Corrector, cfg.Correction, err = calibrate.Correction(f.calDir, f.noCorrect)
	if err != nil {
		fmt.Fprintf(errOut, "tickprof: warning: %v; means are not corrected for the probe overhead\n", err)
	}
	_, err = console.Timing(ctx, errOut, cfg, func(run *timing.Result) error {
		return table.WriteTimeOutputs(out, run, cfg.Precision, f.jsonOut, f.pprofOut)
	})
	if errors.Is(err, proc.ErrNeedProcess) {
		return cli.Usagef("%v: add -p PID or -- CMD", err)
	}
	return err
}
