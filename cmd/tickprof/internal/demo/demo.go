// SPDX-License-Identifier: Apache-2.0

// Package demo owns the workload of `tickprof demo` (c/workload.c): three
// functions of known duration, each measuring itself, built with the
// machine's gcc when the demo runs; the measurements it writes (its truth);
// the probe overhead the demo subtracts; and the demo's run (Run: time,
// sample, and the intervals beside the truth). Like every package under
// cmd/tickprof/internal it may import any library (internal/layers), and
// only cmd/tickprof imports it.
package demo

import (
	"bufio"
	"context"
	_ "embed" // for the workload source
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/internal/cbuild"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/timing"
)

// Source is c/workload.c.
//
//go:embed c/workload.c
var Source []byte

// Functions returns the workload's timed functions, in the order it
// reports them.
func Functions() []string { return []string{"demo_short", "demo_medium", "demo_sleep"} }

// workloadFlags and workloadLibs go before and after the workload's source
// on gcc's command line: frame pointers for the sampled stacks, -g for file
// and line, pthreads and libm.
var (
	workloadFlags = []string{"-O2", "-g", "-fno-omit-frame-pointer", "-pthread"}
	workloadLibs  = []string{"-lm"}
)

// Truth is one line the workload writes: its own measurement of a
// function (calls, mean and standard deviation in ns).
type Truth struct {
	Calls      uint64
	Mean, SDev float64
}

// Build compiles the bundled workload with gcc into dir.
func Build(dir string) (string, error) {
	exe, err := cbuild.BuildSource(dir, "workload", Source, workloadFlags, workloadLibs)
	if err != nil {
		return "", fmt.Errorf("build the demo workload: %w", err)
	}
	return exe, nil
}

// Correction is this machine's probe-overhead correction, as `tickprof
// time` applies it, and where it came from: the saved calibration, or one
// made now and saved (as `tickprof calibrate` would, about 2 minutes)
// when there is none. goTarget is the command that runs the Go
// calibration target (`tickprof calibrate --go-target`).
func Correction(ctx context.Context, errOut io.Writer, goTarget []string) (timing.Corrector, string, error) {
	c, mode, err := calibrate.Correction("", false)
	if err != nil {
		return nil, "", err
	}
	if mode == timing.CorrectionOn {
		if cal, err := calibrate.Load(); err == nil {
			return c, "this machine's calibration of " + cal.Date.Format("2006-01-02 15:04 MST"), nil
		}
		return c, "this machine's calibration", nil
	}
	fmt.Fprintln(errOut, "tickprof: no calibration for this machine: measuring the probe overheads as `tickprof calibrate` does (about 2 minutes, saved for later runs)...")
	cal, err := calibrate.Run(ctx, calibrate.Options{
		Overhead: calibrate.OverheadOptions{Duration: calibrate.DefaultDuration, Runs: calibrate.DefaultRuns, GoTarget: goTarget},
		Progress: func(what string) { fmt.Fprintf(errOut, "tickprof: measuring %s...\n", what) },
	})
	if err != nil {
		return nil, "", fmt.Errorf("calibrate this machine: %w", err)
	}
	path, err := cal.Save("")
	if err != nil {
		return nil, "", err
	}
	c, mode, err = calibrate.Correction("", false)
	if err != nil || mode != timing.CorrectionOn {
		return nil, "", fmt.Errorf("read the calibration just saved in %s: %v", path, err)
	}
	return c, "a calibration made just now (saved in " + path + ")", nil
}

// ReadTruth parses the workload's "truth func=F calls=N mean_ns=X sd_ns=S"
// lines.
func ReadTruth(path string) (map[string]Truth, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("demo: the workload wrote no measurements of its own (%w)", err)
	}
	defer fh.Close()
	out := map[string]Truth{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var fn string
		var t Truth
		if _, err := fmt.Sscanf(sc.Text(), "truth func=%s calls=%d mean_ns=%g sd_ns=%g", &fn, &t.Calls, &t.Mean, &t.SDev); err != nil {
			return nil, fmt.Errorf("demo: workload output %q: %w", sc.Text(), err)
		}
		out[fn] = t
	}
	return out, sc.Err()
}

// Means are the truth's mean times per function (ns).
func Means(truth map[string]Truth) map[string]float64 {
	out := make(map[string]float64, len(truth))
	for fn, t := range truth {
		out[fn] = t.Mean
	}
	return out
}

// Requirements says, in one line, everything the demo lacks: root (or
// CAP_BPF and CAP_PERFMON), gcc, kernel BTF.
func Requirements() error {
	var missing []string
	if err := loader.CheckPrivileges(); errors.Is(err, loader.ErrNotRoot) {
		missing = append(missing, "root (or CAP_BPF and CAP_PERFMON) to load BPF programs: run `sudo tickprof demo`")
	} else if errors.Is(err, loader.ErrNoBTF) {
		missing = append(missing, "a kernel with BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF=y)")
	} else if err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := cbuild.Find(); err != nil {
		missing = append(missing, "gcc to build the workload: apt-get install gcc")
	}
	if len(missing) > 0 {
		return fmt.Errorf("demo needs %s", strings.Join(missing, "; and "))
	}
	return nil
}
