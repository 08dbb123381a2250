// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/loader"
)

// calibrateFlags are the options of `tickprof calibrate`.
type calibrateFlags struct {
	outputFlags
	duration  time.Duration
	runs      int
	noSave    bool
	dir       string
	goTarget  float64 // hidden: be the Go calibration target for this many seconds
	goPattern string  // hidden: the Go calibration target's call pattern
}

func newCalibrateCmd() *cobra.Command {
	var f calibrateFlags
	cmd := command("calibrate", "calibrate [--json]", "Measure clock resolutions and probe overhead on this machine, and save them", func(cmd *cobra.Command, _ []string) error {
		return runCalibrate(cmd, f)
	})
	fl := cmd.Flags()
	fl.DurationVar(&f.duration, "duration", calibrate.DefaultDuration, "how long each probe kind is timed in all, over its runs (each run at least 200ms)")
	fl.IntVar(&f.runs, "runs", calibrate.DefaultRuns, "independent runs per probe kind; the interval spans their spread (at least 2)")
	f.add(cmd, "confidence level of the overhead intervals", "print the calibration as JSON")
	fl.BoolVar(&f.noSave, "no-save", false, "do not save the calibration")
	fl.StringVar(&f.dir, "dir", "", "save into `DIR` instead of the user cache directory's tickprof/")
	fl.Float64Var(&f.goTarget, "go-target", 0, "run as the Go calibration target for `SECONDS` (used by calibrate itself)")
	fl.MarkHidden("go-target")
	fl.StringVar(&f.goPattern, "go-pattern", "", "with --go-target, call the function once per `GAP_NS:sleep|spin[:BODY_NS:OUTFILE]` (used by calibrate itself)")
	fl.MarkHidden("go-pattern")
	return cmd
}

// maxCalibrateRuns bounds --runs: each run is a new target process of at
// least 200ms per probe kind.
const maxCalibrateRuns = 100

func runCalibrate(cmd *cobra.Command, f calibrateFlags) error {
	if f.goTarget > 0 {
		// The Go calibration target: this same binary, calling an empty
		// Go function in a loop while its parent times it.
		d := time.Duration(f.goTarget * float64(time.Second))
		if f.goPattern != "" {
			// GAP_NS:HOW[:BODY_NS:OUTFILE]
			p := strings.SplitN(f.goPattern, ":", 4)
			gap, _ := strconv.ParseInt(p[0], 10, 64)
			how, body, out := "", int64(0), ""
			if len(p) > 1 {
				how = p[1]
			}
			if len(p) == 4 {
				body, _ = strconv.ParseInt(p[2], 10, 64)
				out = p[3]
			}
			return calibrate.GoPatternLoop(cmd.Context(), d, time.Duration(gap), how, time.Duration(body), out)
		}
		calibrate.GoLoop(cmd.Context(), d)
		return nil
	}
	conf, confErr := parseConfidence(f.confidence)
	if err := cli.FirstErr(
		cli.UsageIf(f.duration < 100*time.Millisecond, "--duration %s: want at least 100ms", f.duration),
		cli.UsageIf(f.runs < 2 || f.runs > maxCalibrateRuns, "--runs %d: want 2 to %d, at least 2 so that the interval holds the between-run variation", f.runs, maxCalibrateRuns),
		cli.UsageIf(f.duration > time.Hour, "--duration %s: want at most 1h per probe kind", f.duration),
		calibrateDir(f.dir), confErr, loader.CheckPrivileges(),
	); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errOut := cmd.ErrOrStderr()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find tickprof's own executable (the Go calibration target): %w", err)
	}
	c, err := calibrate.Run(ctx, calibrate.Options{
		Overhead: calibrate.OverheadOptions{Duration: f.duration, Runs: f.runs, Confidence: conf,
			GoTarget: []string{self, "calibrate", "--go-target"}},
		Progress: func(what string) { fmt.Fprintf(errOut, "tickprof: measuring %s...\n", what) },
	})
	if err != nil {
		return err
	}
	path := ""
	if !f.noSave {
		if path, err = c.Save(f.dir); err != nil {
			return err
		}
	}
	if err := export.Write(cmd.OutOrStdout(), f.json, c, table.WriteCalibration); err != nil || f.json || path == "" {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "saved %s: the probe overheads that correct measured means on this machine\n", path)
	return nil
}

// calibrateDir checks --dir: an existing directory must take a new
// calibration.json; one that does not exist yet is made when saving.
func calibrateDir(dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err != nil {
		return nil
	} else if !st.IsDir() {
		return cli.Usagef("--dir %s is not a directory: give the directory to save the calibration in", dir)
	}
	return checkOutput("--dir", filepath.Join(dir, "calibration.json"))
}
