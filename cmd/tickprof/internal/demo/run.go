// SPDX-License-Identifier: Apache-2.0

package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/console"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/sampler"
	"github.com/tickprof/tickprof/timing"
)

// Options are the choices of a demo run.
type Options struct {
	Dir       string        // where demo-time.pb.gz and demo-cpu.pb.gz go
	Precision float64       // stop timing when every interval is within this share
	PrecText  string        // Precision as typed, for the command line shown
	Limit     time.Duration // stop timing after this long in any case
	SampleFor time.Duration // how long to sample
	Frequency int           // samples per second per CPU
	// GoTarget runs the Go calibration target when the machine must be
	// calibrated first (`tickprof calibrate --go-target`).
	GoTarget []string
}

// Run builds the workload, times its functions with the jiffies clock
// until the precision or the limit, samples it, and prints each function's
// interval beside the truth the workload measured, raw and corrected for
// the probe overhead as `tickprof time` corrects it (this machine's
// calibration, made now and saved when there is none). It
// prints on out what `tickprof time` and `tickprof sample` would, and its
// progress on errOut.
func Run(ctx context.Context, out, errOut io.Writer, o Options) error {
	work, err := os.MkdirTemp("", "tickprof-demo-")
	if err != nil {
		return fmt.Errorf("make a build directory: %w", err)
	}
	defer os.RemoveAll(work)
	exe, err := Build(work)
	if err != nil {
		return err
	}
	timeOut, cpuOut := filepath.Join(o.Dir, "demo-time.pb.gz"), filepath.Join(o.Dir, "demo-cpu.pb.gz")
	truthFile := filepath.Join(work, "truth.txt")
	corr, corrFrom, err := Correction(ctx, errOut, o.GoTarget)
	if err != nil {
		return err
	}
	targets, err := runTime(ctx, out, errOut, o, exe, truthFile, timeOut, corr)
	if err != nil {
		return fmt.Errorf("demo: timing: %w", err)
	}
	truth, err := ReadTruth(truthFile)
	if err != nil {
		return err
	}
	if err := runSample(ctx, out, errOut, o, exe, filepath.Join(work, "truth-sample.txt"), cpuOut); err != nil {
		return fmt.Errorf("demo: sampling: %w", err)
	}
	return table.WriteDemoSummary(out, targets, Means(truth), corrFrom, timeOut, cpuOut)
}

// runSample samples the workload for o.SampleFor and prints the top
// functions, as `tickprof sample` would.
func runSample(ctx context.Context, out, errOut io.Writer, o Options, exe, truthFile, cpuOut string) error {
	argv := []string{exe, "-t", truthFile, strconv.Itoa(int(o.SampleFor.Seconds()) + 30)}
	fmt.Fprintf(out, "\n== tickprof sample -F %d --duration %s -o %s --top 8 -- %s\n", o.Frequency, o.SampleFor, cpuOut, strings.Join(argv, " "))
	cfg := sampler.Config{Frequency: o.Frequency, Command: argv, Duration: o.SampleFor,
		Stdin: os.Stdin, Stdout: out, Stderr: errOut}
	return console.Sample(ctx, out, errOut, cfg, console.SampleOutput{File: cpuOut, Top: 8, Confidence: 0.95})
}

// runTime times the workload's functions with the jiffies clock until
// every interval is within the precision or the limit, and prints and
// writes (to timeOut) what `tickprof time` would.
func runTime(ctx context.Context, out, errOut io.Writer, o Options, exe, truthFile, timeOut string, corr timing.Corrector) (*timing.Result, error) {
	argv := []string{exe, "-t", truthFile, strconv.Itoa(int(o.Limit.Seconds()) + 30)}
	cfg := timing.Config{Command: argv, Clock: timing.Clock{Kind: timing.ClockJiffies},
		Targets:  timing.Targets{Users: Functions(), MaxProbes: 256},
		Estimate: estimate.Options{Confidence: 0.95}, Precision: o.Precision, Duration: o.Limit,
		Corrector: corr, Correction: timing.CorrectionOn}
	fmt.Fprintf(out, "== tickprof time --clock jiffies --precision %s --duration %s -o %s -u %s -- %s\n",
		o.PrecText, o.Limit, timeOut, strings.Join(Functions(), " -u "), strings.Join(argv, " "))
	return console.Timing(ctx, errOut, cfg, func(run *timing.Result) error {
		if err := table.WriteTimeTable(out, run, o.Precision); err != nil {
			return err
		}
		return export.WriteTimeProfile(timeOut, run)
	})
}
