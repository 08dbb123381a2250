// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tickprof/tickprof/bench/benchkit"
)

// targets are the built target programs.
type targets struct{ cBin, goBin string }

// buildTargets builds testdata/coverage's C target (gcc -O0, so that each
// probed function starts with an emulated push %rbp) and Go target with
// the go command gotool into dir.
func buildTargets(repo, dir, gotool string) (targets, error) {
	t := targets{cBin: filepath.Join(dir, "coverage"), goBin: filepath.Join(dir, "chanwait")}
	if err := benchkit.BuildC(t.cBin, filepath.Join(repo, "testdata", "coverage", "coverage.c"), "-pthread"); err != nil {
		return t, err
	}
	cmd := exec.Command(gotool, "build", "-o", t.goBin, "./testdata/coverage/chanwait")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return t, fmt.Errorf("go build chanwait: %v: %s", err, out)
	}
	return t, nil
}

// runner runs cases under tickprof.
type runner struct {
	tickprof string
	bins     targets
	env      []string // the environment of tickprof (nil: this one's)
	extra    []string // more `tickprof time` arguments (e.g. --no-correct)
	dir      string   // scratch directory
}

// outcome is one run of a case: the machine's load around it and each
// figure judged.
type outcome struct {
	load0, load1 float64
	calls        uint64 // the calls tickprof counted
	targetCalls  float64
	checks       []check
	wall         time.Duration
}

// run runs c once for secs seconds and judges what tickprof reported.
func (r *runner) run(c tcase, secs float64) (outcome, error) {
	truthFile := filepath.Join(r.dir, c.name+".truth")
	jsonFile := filepath.Join(r.dir, c.name+".json")
	os.Remove(truthFile)
	os.Remove(jsonFile)
	args := append([]string{"time"}, c.probe...)
	args = append(args, r.extra...)
	args = append(args, "--json", jsonFile, "--")
	args = append(args, c.command(r.bins, truthFile, secs)...)
	// A loaded machine slows tickprof's start (loading and verifying its BPF
	// programs) by minutes: the limit only catches a run that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(3*secs+300)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.tickprof, args...)
	cmd.Env = r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	o := outcome{load0: loadAvg()}
	began := time.Now()
	err := cmd.Run()
	o.wall, o.load1 = time.Since(began), loadAvg()
	if err != nil {
		return o, fmt.Errorf("tickprof %s: %v: %s", strings.Join(args, " "), err, tail(out.String(), 800))
	}
	truth, err := readTruth(truthFile)
	if err != nil {
		return o, err
	}
	rep, err := readReport(jsonFile)
	if err != nil {
		return o, err
	}
	o.calls, o.targetCalls = rep.Calls, truth["calls"]
	o.checks, err = judge(c, truth, rep)
	return o, err
}

// loadAvg returns the 1-minute load average of /proc/loadavg (NaN when
// unreadable).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// readTruth reads a target's truth file: key=value lines.
func readTruth(path string) (map[string]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the target wrote no truth: %w", err)
	}
	vs := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("truth file %s: bad line %q", path, sc.Text())
		}
		vs[k] = x
	}
	if vs["calls"] <= 0 {
		return nil, fmt.Errorf("truth file %s: no calls", path)
	}
	return vs, nil
}

// report is the part of `tickprof time --json` the suite reads: the one
// target's figures. A bound that is absent is unbounded on its side.
type report struct {
	Calls     uint64   `json:"calls"`
	Mean      *float64 `json:"mean_ns"`
	Low       *float64 `json:"low_ns"`
	High      *float64 `json:"high_ns"`
	NsMean    *float64 `json:"ns_mean"`
	Error     string   `json:"error"`
	Quantiles []struct {
		Name  string   `json:"name"`
		Value float64  `json:"value_ns"`
		Low   *float64 `json:"low_ns"`
		High  *float64 `json:"high_ns"`
	} `json:"quantiles"`
}

// readReport reads the one target of tickprof's JSON file.
func readReport(path string) (report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return report{}, fmt.Errorf("tickprof wrote no JSON: %w", err)
	}
	var doc struct {
		Targets []report `json:"targets"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return report{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(doc.Targets) != 1 {
		return report{}, fmt.Errorf("%s: %d targets, want 1", path, len(doc.Targets))
	}
	return doc.Targets[0], nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// calibrateInto runs `tickprof calibrate` into dir/cache/tickprof and
// returns the environment under which `tickprof time` reads that
// calibration (XDG_CACHE_HOME=dir/cache: time has no flag for it).
func calibrateInto(tickprof, dir string) ([]string, error) {
	cache := filepath.Join(dir, "cache")
	if err := os.MkdirAll(filepath.Join(cache, "tickprof"), 0o700); err != nil {
		return nil, err
	}
	out, err := exec.Command(tickprof, "calibrate", "--dir", filepath.Join(cache, "tickprof")).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("tickprof calibrate: %v: %s", err, tail(string(out), 800))
	}
	return append(os.Environ(), "XDG_CACHE_HOME="+cache), nil
}
