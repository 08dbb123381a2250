// SPDX-License-Identifier: Apache-2.0

// Command coverage is tickprof's coverage suite (`make coverage`): real
// targets on ordinary call patterns, each timing itself inside the probed
// function on every call (testdata/coverage), run under `tickprof time`
// with its default clock and correction, N times each; it counts how often
// tickprof's interval held the truth, per case and figure, and writes the
// table into docs/coverage.md (between its table markers), which says what
// each case is and how the truth is known.
//
// Run as root from the repository root:
//
//	coverage [-tickprof bin/tickprof] [-runs 20] [-cases a,b] [-scale 1]
//	         [-doc docs/coverage.md] [-raw FILE] [-extra "--no-correct"]
//	         [-calibrate=false]
//
// It first runs `tickprof calibrate` into its own directory and times
// with that calibration (a user who calibrated once), unless -calibrate=false:
// then with the user's own.
//
// The runs go round-robin over the cases (one run of each, then the next
// round), so that a change in the machine's load spreads over all cases.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// options are the command line's settings.
type options struct {
	tickprof, only, doc, raw, extra string
	runs                            int
	scale                           float64
	calibrate                       bool
}

func main() {
	var o options
	flag.StringVar(&o.tickprof, "tickprof", "bin/tickprof", "tickprof binary")
	flag.IntVar(&o.runs, "runs", 20, "runs per case")
	flag.StringVar(&o.only, "cases", "", "comma-separated case names to run (default all): "+caseNames())
	flag.Float64Var(&o.scale, "scale", 1, "multiplies every case's run length")
	flag.StringVar(&o.doc, "doc", "docs/coverage.md", "document whose table section is replaced (empty: print the table only)")
	flag.StringVar(&o.raw, "raw", "", "write one tab-separated line per run and figure to this file")
	flag.StringVar(&o.extra, "extra", "", "more `tickprof time` arguments, space-separated (e.g. --no-correct)")
	flag.BoolVar(&o.calibrate, "calibrate", true, "run `tickprof calibrate` first and time with that calibration (else: the user's)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "coverage:", err)
		os.Exit(1)
	}
}

func caseNames() string {
	var n []string
	for _, c := range cases() {
		n = append(n, c.name)
	}
	return strings.Join(n, ",")
}

func run(o options) error {
	cs, err := selectCases(cases(), o.only)
	if err != nil {
		return err
	}
	if o.runs < 1 || !(o.scale > 0) {
		return fmt.Errorf("-runs %d, -scale %g: want at least 1 run and a positive scale", o.runs, o.scale)
	}
	tp, err := filepath.Abs(o.tickprof)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "tickprof-coverage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins, err := buildTargets(".", dir, goTool())
	if err != nil {
		return err
	}
	r := &runner{tickprof: tp, bins: bins, extra: strings.Fields(o.extra), dir: dir}
	began := time.Now()
	if o.calibrate {
		logf("tickprof calibrate (about 1.5 min)")
		if r.env, err = calibrateInto(tp, dir); err != nil {
			return err
		}
	}
	res := r.rounds(cs, o.runs, func(c tcase) float64 { return o.scale * c.seconds }, logf)
	took := time.Since(began)
	tbl := table(tallies(res))
	fmt.Print(tbl)
	if o.raw != "" {
		if err := writeRaw(o.raw, res); err != nil {
			return err
		}
	}
	if o.doc == "" {
		return nil
	}
	return updateDoc(o.doc, section(res, tbl, o, began, took))
}

// rounds runs every case n times, round-robin, each for secs(c) seconds.
func (r *runner) rounds(cs []tcase, n int, secs func(tcase) float64, log func(string, ...any)) []caseRuns {
	res := make([]caseRuns, len(cs))
	for i, c := range cs {
		res[i].c = c
	}
	for k := 0; k < n; k++ {
		for i, c := range cs {
			o, err := r.run(c, secs(c))
			if err != nil {
				log("round %d %s: %v", k+1, c.name, err)
				res[i].failures = append(res[i].failures, err.Error())
				continue
			}
			res[i].outcomes = append(res[i].outcomes, o)
			log("round %d %s: %s (load %.1f-%.1f, %.1fs)", k+1, c.name, brief(o.checks), o.load0, o.load1, o.wall.Seconds())
		}
	}
	return res
}

// brief is one line on a run's checks: each figure, held or not, with the
// estimate's error.
func brief(cs []check) string {
	var s []string
	for _, c := range cs {
		v := "held"
		if !c.held {
			v = "MISSED"
		}
		s = append(s, fmt.Sprintf("%s %s %s", c.name, v, pct(c.relError(), 1)))
	}
	return strings.Join(s, ", ")
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "coverage: "+format+"\n", a...)
}

// goTool returns the go command of this program's toolchain, else the one
// in PATH.
func goTool() string {
	//lint:ignore SA1019 the toolchain that built this program builds the Go target
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err != nil {
		return "go"
	}
	return g
}
