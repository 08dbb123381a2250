// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/demo"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/sampler"
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
	cmd := command("demo", "demo", "Time and sample a bundled workload, with the known truth beside each interval", func(cmd *cobra.Command, _ []string) error {
		return runDemo(cmd, f)
	})
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
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	precision, _ := units.ParsePercent(f.precision)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find tickprof's own executable (the Go calibration target): %w", err)
	}
	return noSamplesHint(demo.Run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), demo.Options{Dir: f.dir,
		Precision: precision, PrecText: f.precision, Limit: f.limit, SampleFor: f.sampleFor, Frequency: f.freq,
		GoTarget: []string{self, "calibrate", "--go-target"}}))
}

// checkDemoFlags validates every flag before anything is built or run
// (-F 0 failed only after 40 s of timing).
func checkDemoFlags(f demoFlags) error {
	p, err := units.ParsePercent(f.precision)
	if err != nil {
		return cli.Usagef("--precision: %v", err)
	}
	if !(p > 0 && p < 1) {
		return cli.Usagef("--precision %s: want a relative half-width above 0%% and below 100%%, e.g. 5%%", f.precision)
	}
	if f.limit < time.Second || f.sampleFor < time.Second || f.limit > time.Hour || f.sampleFor > time.Hour {
		return cli.Usagef("--limit %s, --sample %s: want each from 1s to 1h", f.limit, f.sampleFor)
	}
	if f.freq < 1 || f.freq > sampler.MaxFrequency {
		return cli.Usagef("-F %d: the rate must be between 1 and %d samples per second", f.freq, sampler.MaxFrequency)
	}
	for _, name := range []string{"demo-time.pb.gz", "demo-cpu.pb.gz"} {
		if err := checkOutput("--dir", filepath.Join(f.dir, name)); err != nil {
			return err
		}
	}
	return nil
}
