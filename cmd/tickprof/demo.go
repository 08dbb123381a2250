package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/demo"
	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/sampler"
	"github.com/tickprof/tickprof/timing"
	"github.com/tickprof/tickprof/units"
)

// demoFlags are the options of `tickprof demo`.
type demoFlags struct {
	dir       string
	precision string
	limit     time.Duration
	sampleFor time.Duration
	freq      int
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Time and sample a bundled workload, with the known truth beside each interval",
		Long:  help("demo"),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", ".", "write demo-time.pb.gz and demo-cpu.pb.gz into `DIR`")
	fl.StringVar(&f.precision, "precision", "5%", "stop timing when every interval is within this share of its mean")
	fl.DurationVar(&f.limit, "limit", 35*time.Second, "stop timing after this long even if the precision is not reached")
	fl.DurationVar(&f.sampleFor, "sample", 5*time.Second, "how long to sample")
	fl.IntVarP(&f.freq, "frequency", "F", 999, "sampling rate per CPU (`HZ`)")
	return cmd
}

func runDemo(cmd *cobra.Command, f demoFlags) error {
	if err := checkDemoFlags(f); err != nil {
		return err
	}
	if err := demo.Requirements(); err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	work, err := os.MkdirTemp("", "tickprof-demo-")
	if err != nil {
		return fmt.Errorf("make a build directory: %w", err)
	}
	defer os.RemoveAll(work)
	exe, err := demo.Build(work)
	if err != nil {
		return err
	}
	timeOut := filepath.Join(f.dir, "demo-time.pb.gz")
	truthFile := filepath.Join(work, "truth.txt")

	// The probe overhead: this machine's calibration, or a quick one now.
	ovhd, ovhdFrom, err := demo.Overhead(ctx, work, errOut)
	if err != nil {
		return err
	}

	// 1. Time, with the jiffies clock, until the precision or the limit.
	// Not corrected: the table below subtracts the overhead once, the one
	// it prints (this machine's calibration, or the quick one just made).
	targets, err := demoTime(ctx, out, errOut, f, exe, truthFile, timeOut)
	if err != nil {
		return fmt.Errorf("demo: timing: %w", err)
	}
	truth, err := demo.ReadTruth(truthFile)
	if err != nil {
		return err
	}

	// 2. Sample.
	cpuOut := filepath.Join(f.dir, "demo-cpu.pb.gz")
	if err := demoSample(ctx, out, errOut, f, exe, filepath.Join(work, "truth-sample.txt"), cpuOut); err != nil {
		return fmt.Errorf("demo: sampling: %w", err)
	}
	// 3. The intervals beside the truth.
	return export.WriteDemoSummary(out, targets, demo.Means(truth), ovhd, ovhdFrom, timeOut, cpuOut)
}

// demoSample samples the workload for f.sampleFor and prints the top
// functions, as `tickprof sample` would.
func demoSample(ctx context.Context, out, errOut io.Writer, f demoFlags, exe, truthFile, cpuOut string) error {
	argv := []string{exe, "-t", truthFile, strconv.Itoa(int(f.sampleFor.Seconds()) + 30)}
	fmt.Fprintf(out, "\n== tickprof sample -F %d --duration %s -o %s --top 8 -- %s\n", f.freq, f.sampleFor, cpuOut, strings.Join(argv, " "))
	rc := sampler.RunConfig{Config: sampler.Config{Frequency: f.freq}, Command: argv, Duration: f.sampleFor,
		Stdin: os.Stdin, Stdout: out, Stderr: errOut}
	return sampleAndReport(ctx, out, errOut, rc, sampleOutput{file: cpuOut, top: 8, conf: 0.95})
}

// demoTime times the workload's functions with the jiffies clock until
// every interval is within the precision or the limit, and prints and
// writes (to timeOut) what `tickprof time` would.
func demoTime(ctx context.Context, out, errOut io.Writer, f demoFlags, exe, truthFile, timeOut string) (*timing.Result, error) {
	precision, _ := units.ParsePercent(f.precision)
	argv := []string{exe, "-t", truthFile, strconv.Itoa(int(f.limit.Seconds()) + 30)}
	cfg := timing.Config{Command: argv, Clock: loader.Clock{Kind: loader.ClockJiffies},
		Targets:  timing.Targets{Users: demo.Functions(), MaxProbes: 256},
		Estimate: estimate.Options{Confidence: 0.95}, Precision: precision, Duration: f.limit,
		Correction: timing.CorrectionOff}
	fmt.Fprintf(out, "== tickprof time --clock jiffies --precision %s --duration %s --no-correct -o %s -u %s -- %s\n",
		f.precision, f.limit, timeOut, strings.Join(demo.Functions(), " -u "), strings.Join(argv, " "))
	return runTiming(ctx, errOut, cfg, func(run *timing.Result) error {
		if err := export.WriteTimeTable(out, run, precision); err != nil {
			return err
		}
		return export.WriteTimeProfile(timeOut, run)
	})
}

// checkDemoFlags validates every flag before anything is built or run
// (-F 0 failed only after 40 s of timing).
func checkDemoFlags(f demoFlags) error {
	p, err := units.ParsePercent(f.precision)
	if err != nil {
		return usagef("--precision: %v", err)
	}
	if !(p > 0 && p < 1) {
		return usagef("--precision %s: want a relative half-width above 0%% and below 100%%, e.g. 5%%", f.precision)
	}
	if f.limit < time.Second || f.sampleFor < time.Second || f.limit > time.Hour || f.sampleFor > time.Hour {
		return usagef("--limit %s, --sample %s: want each from 1s to 1h", f.limit, f.sampleFor)
	}
	if f.freq < 1 || f.freq > sampler.MaxFrequency {
		return usagef("-F %d: the rate must be between 1 and %d samples per second", f.freq, sampler.MaxFrequency)
	}
	for _, name := range []string{"demo-time.pb.gz", "demo-cpu.pb.gz"} {
		if err := checkOutput("--dir", filepath.Join(f.dir, name)); err != nil {
			return err
		}
	}
	return nil
}
