// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/console"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/termsafe"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/sampler"
)

// sampleFlags are the options of `tickprof sample`.
type sampleFlags struct {
	pid       int
	all       bool
	freq      int
	duration  string
	out       string
	count     []string
	top       int
	userStack int
	fixed     bool
	offCPU    bool
	wall      bool
	offProb   float64
	outputFlags
}

func newSampleCmd() *cobra.Command {
	f := &sampleFlags{}
	cmd := command("sample", "sample [-p PID | --all | -- CMD ARGS...]", "Sample stacks on a CPU timer: shares and times with confidence intervals", func(cmd *cobra.Command, args []string) error {
		return runSample(cmd, f, args)
	})
	cmd.Args = cobra.ArbitraryArgs // checked in runSample: -- CMD ARGS
	fl := cmd.Flags()
	fl.IntVarP(&f.pid, "pid", "p", 0, "sample the process `PID` (and the children it starts)")
	fl.BoolVar(&f.all, "all", false, "sample every process")
	fl.IntVarP(&f.freq, "frequency", "F", 99, "samples per second per CPU (`HZ`)")
	fl.BoolVar(&f.fixed, "fixed-period", false, "sample on a fixed grid of 1/HZ, as perf does, instead of dithered periods (a program periodic at the rate can bias it: for comparisons)")
	fl.StringVar(&f.duration, "duration", "", "stop after this long (e.g. 10s; default: until the target exits or Ctrl-C)")
	fl.StringVarP(&f.out, "output", "o", "sample.pb.gz", "write the pprof CPU profile to `FILE` (\"\" for none)")
	fl.StringArrayVar(&f.count, "count", nil, "count calls of `[BINARY:]SYMBOL` and report its time per call (repeatable)")
	fl.IntVar(&f.top, "top", 20, "show the top `N` functions (0 for all)")
	f.add(cmd, "confidence level of the intervals", "print the table as JSON")
	fl.BoolVar(&f.offCPU, "off-cpu", false, "estimate time off CPU by stack (blocked, or waiting for a CPU) from sampled scheduler switches")
	fl.BoolVar(&f.wall, "wall", false, "estimate wall-clock time by stack: on-CPU samples and off-CPU time together")
	fl.Float64Var(&f.offProb, "off-cpu-prob", 0, "sample each interval off CPU with probability `P` (0: chosen from the switch rate for a 1% CPU budget; 1: every one)")
	fl.IntVar(&f.userStack, "user-stack", sampler.DefaultStackBytes, "copy `BYTES` of user stack per sample to unwind it by call frame information (0: frame pointers only; at most 28672)")
	return cmd
}

func runSample(cmd *cobra.Command, f *sampleFlags, args []string) error {
	targets := 0
	for _, set := range []bool{f.pid != 0, f.all, len(args) > 0} {
		if set {
			targets++
		}
	}
	conf, confErr := parseConfidence(f.confidence)
	dur, durErr := sampleDuration(f.duration)
	if err := cli.FirstErr(
		cli.UsageIf(targets != 1, "sample needs exactly one target: -p PID, --all, or -- CMD ARGS"),
		cli.UsageIf(len(args) > 0 && cmd.ArgsLenAtDash() != 0, "put the command after --: tickprof sample [flags] -- %s", cli.FirstArg(args)),
		cli.UsageIf(f.pid < 0, "-p %d: a PID is positive", f.pid),
		cli.UsageIf(f.top < 0, "--top %d: give a count, or 0 for all", f.top),
		checkOutput("-o", f.out),
		cli.UsageIf(f.freq < 1 || f.freq > sampler.MaxFrequency, "-F %d: the rate must be between 1 and %d samples per second", f.freq, sampler.MaxFrequency),
		confErr, durErr, countNeedsFile(f.all, f.count),
		// Before a command is started: say what is missing, not what failed.
		loader.CheckPrivileges(),
		cli.UsageIf(f.offCPU && f.wall, "--off-cpu and --wall: give one (--wall includes the off-CPU time)"),
		cli.UsageIf(f.offProb < 0 || f.offProb > 1, "--off-cpu-prob %g: give a probability in (0, 1], or 0 to choose it", f.offProb),
		cli.UsageIf(f.offProb != 0 && !f.offCPU && !f.wall, "--off-cpu-prob needs --off-cpu or --wall"),
		cli.UsageIf(f.userStack < 0 || f.userStack > sampler.MaxStackBytes, "--user-stack %d: give 0 (frame pointers only) up to %d bytes", f.userStack, sampler.MaxStackBytes),
	); err != nil {
		return err
	}
	tightenSampleGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := sampler.Config{Frequency: f.freq, All: f.all, Count: f.count, StackBytes: f.userStack, FramePointersOnly: f.userStack == 0,
		FixedPeriod: f.fixed, Command: args, Duration: dur,
		// The command's own output is its own: not escaped.
		Stdin: os.Stdin, Stdout: termsafe.Unwrap(cmd.OutOrStdout()), Stderr: termsafe.Unwrap(cmd.ErrOrStderr())}
	if f.pid != 0 {
		cfg.PIDs = []int{f.pid}
	}
	out := console.SampleOutput{File: f.out, Top: f.top, Confidence: conf, JSON: f.json}
	if f.offCPU || f.wall {
		cfg.OffCPU = sampler.OffCPUConfig{Enabled: true, Prob: f.offProb}
		out.OffCPU = export.OffCPUType
		if f.wall {
			out.OffCPU = export.WallType
		}
	}
	return noSamplesHint(console.Sample(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, out))
}

// sampleDuration parses --duration ("": until the target exits).
func sampleDuration(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	ns, err := units.ParseDuration(v)
	if err != nil {
		return 0, cli.Usagef("--duration: %v", err)
	}
	return time.Duration(ns), cli.UsageIf(ns <= 0, "--duration %s: give a positive length such as 10s", v)
}

// countNeedsFile requires, with --all, a path in every --count target:
// a bare symbol names no one file in every process.
func countNeedsFile(all bool, count []string) error {
	for _, c := range count {
		if bin, sym := proc.SplitTarget(c); all && !strings.Contains(bin, "/") {
			return cli.Usagef("--count %s: with --all name the file too: --count /path/to/binary:%s", c, sym)
		}
	}
	return nil
}

// noSamplesHint adds to console.ErrNoSamples what to try.
func noSamplesHint(err error) error {
	if errors.Is(err, console.ErrNoSamples) {
		return fmt.Errorf("%w; sample longer or at a higher -F", err)
	}
	return err
}
