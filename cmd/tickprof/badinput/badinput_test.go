// SPDX-License-Identifier: Apache-2.0

// Package badinput runs the tickprof binary on malformed input of every
// command and flag, and on hostile files, and checks that each run ends in
// time with the right exit status and one line that says what is wrong
// and what is expected, never a panic.
package badinput

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/testtarget"
)

// caseTimeout is the hang detector: every case here fails within
// milliseconds; one still running after 5 s is stuck.
const caseTimeout = 5 * time.Second

var (
	bin  string // the tickprof binary built in TestMain
	fix  string // the directory of fixture files
	work string // a scratch directory for outputs
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "tickprof-badinput-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if bin, err = testtarget.BuildTickprof(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fix = filepath.Join(tmp, "fixtures")
	work = filepath.Join(tmp, "work")
	if err := writeFixtures(); err != nil {
		fmt.Fprintln(os.Stderr, "fixtures:", err)
		return 1
	}
	// A process of the caller's own for the cases that resolve targets in
	// one (they fail before anything is loaded).
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start sleep:", err)
		return 1
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	sleeperPID = strconv.Itoa(sleeper.Process.Pid)
	return m.Run()
}

// sleeperPID is the PID of a sleep(1) the cases may name.
var sleeperPID string

// tc is one bad input: the arguments, the exit status, and two patterns
// the one-line error must match: what is wrong and what is expected.
type tc struct {
	name   string
	args   []string
	exit   int
	wrong  string // a substring naming what is wrong
	expect string // a regexp matching what is expected
	root   bool   // needs root (privileges, other users)
}

// expected phrases: every error names what it wants.
const (
	wantPct   = `write it as 95%|e\.g\. 95%|such as 0\.95|at most 1 such as`
	wantDur   = `e\.g\. --|e\.g\. 16\.666ms|such as 16\.666ms|e\.g\. [^ ]+ 1ms|add one of ns|use ns, us|give a shorter one|give a positive length`
	wantCount = `e\.g\. --`
	wantFile  = `give a file|not a pprof profile|give the file|over the .* limit|no such file`
)

func fx(name string) string { return filepath.Join(fix, name) }

func cases() []tc {
	var cs []tc
	add := func(c tc) { cs = append(cs, c) }

	// Confidence levels, on every command that takes one.
	confCmds := map[string][]string{
		"plan":        {"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "5%"},
		"plan --from": {"plan", "--from", fx("pilot.json"), "--precision", "5%"},
		"estimate":    {"estimate", "--resolution", "1ms", "--calls", "100", "--ticks", "40"},
		"estimate sh": {"estimate", "--samples", "100", "--hits", "4"},
		"report":      {"report", fx("cpu.pb.gz")},
		"diff":        {"diff", fx("cpu.pb.gz"), fx("cpu.pb.gz")},
		"sample":      {"sample", "-p", "1", "-o", ""},
		"time":        {"time", "-u", "f", "-p", "1"},
		"calibrate":   {"calibrate", "--no-save"},
	}
	for _, v := range []string{"", "abc", "0", "0%", "100%", "1", "150%", "-5%", "95", "nan", "inf", "1e-3",
		"0x1p-1", "99.99999999999%", "0.0000001%", "95%%", "%", "1.5", "95 %%"} {
		for name, base := range confCmds {
			add(tc{name: name + " --confidence " + v, args: append(append([]string{}, base...), "--confidence", v),
				exit: 2, wrong: "--confidence", expect: wantPct})
		}
	}

	// Durations parsed by tickprof (decimals, units).
	durFlags := map[string][]string{
		"plan --resolution":   {"plan", "--expect", "2.5ms", "--precision", "5%", "--resolution"},
		"plan --expect":       {"plan", "--resolution", "1ms", "--precision", "5%", "--expect"},
		"plan --abs-error":    {"plan", "--resolution", "1ms", "--expect", "2.5ms", "--abs-error"},
		"plan --loop":         {"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "5%", "--loop"},
		"estimate --res":      {"estimate", "--calls", "100", "--ticks", "40", "--resolution"},
		"estimate --period":   {"estimate", "--samples", "100", "--hits", "4", "--period"},
		"estimate --elapsed":  {"estimate", "--samples", "100", "--hits", "4", "--elapsed"},
		"sample --duration":   {"sample", "-p", "1", "-o", "", "--duration"},
		"plan --from --abs":   {"plan", "--from", fx("pilot.json"), "--abs-error"},
		"plan --resolution2":  {"plan", "--expect", "1s", "--digits", "3", "--resolution"},
		"estimate --res-hits": {"estimate", "--batches", fx("batches.txt"), "--resolution"},
	}
	for _, v := range []string{"", "abc", "10", "-1ms", "1xs", "ms", "1e3ms", "99999999999999999999h", "0",
		"1..2ms", "nan", "inf", "0ns", "-0s"} {
		for name, base := range durFlags {
			flag := base[len(base)-1]
			if v == "" && name == "sample --duration" {
				continue // "" is the default: no limit
			}
			add(tc{name: name + " " + v, args: append(append([]string{}, base...), v), exit: 2, wrong: flag, expect: wantDur})
		}
	}

	// Durations parsed by the flag package (time, calibrate, demo).
	for _, c := range []struct {
		args   []string
		wrong  string
		expect string
	}{
		{[]string{"time", "-u", "f", "-p", "1", "--duration", "abc"}, "--duration", "see --help"},
		{[]string{"time", "-u", "f", "-p", "1", "--duration", "1000000000h"}, "--duration", "see --help"},
		{[]string{"time", "-u", "f", "-p", "1", "--duration", "-1s"}, "--duration", "want a positive duration"},
		{[]string{"time", "-u", "f", "-p", "1", "--interval", "5ms"}, "--interval", "want 10ms to 1h"},
		{[]string{"time", "-u", "f", "-p", "1", "--interval", "2h"}, "--interval", "want 10ms to 1h"},
		{[]string{"time", "-u", "f", "-p", "1", "--interval", "0"}, "--interval", "want 10ms to 1h"},
		{[]string{"time", "-u", "f", "-p", "1", "--interval", "x"}, "--interval", "see --help"},
		{[]string{"calibrate", "--duration", "10ms"}, "--duration", "want at least 100ms"},
		{[]string{"calibrate", "--duration", "2h"}, "--duration", "want at most 1h"},
		{[]string{"calibrate", "--duration", "x"}, "--duration", "see --help"},
		{[]string{"demo", "--limit", "0s"}, "--limit", "want each from 1s to 1h"},
		{[]string{"demo", "--limit", "100h"}, "--limit", "want each from 1s to 1h"},
		{[]string{"demo", "--sample", "10ms"}, "--sample", "want each from 1s to 1h"},
		{[]string{"demo", "--sample", "x"}, "--sample", "see --help"},
	} {
		add(tc{name: strings.Join(c.args, " "), args: c.args, exit: 2, wrong: c.wrong, expect: c.expect})
	}

	// Integers: counts, rates, PIDs.
	for _, c := range []struct {
		args          []string
		wrong, expect string
	}{
		{[]string{"report", "--top", "-1", fx("cpu.pb.gz")}, "--top -1", "give a count, or 0"},
		{[]string{"sample", "--top", "-1", "-p", "1"}, "--top -1", "give a count, or 0"},
		{[]string{"report", "--top", "x", fx("cpu.pb.gz")}, "--top", "see --help"},
		{[]string{"sample", "--top", "99999999999999999999", "-p", "1"}, "--top", "see --help"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--digits", "0"}, "--digits", "from 1 to 15"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--digits", "16"}, "--digits", "from 1 to 15"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--digits", "-3"}, "--digits", "from 1 to 15"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--digits", "x"}, "--digits", "see --help"},
		{[]string{"sample", "-F", "0", "-p", "1"}, "-F 0", "between 1 and"},
		{[]string{"sample", "-F", "-5", "-p", "1"}, "-F -5", "between 1 and"},
		{[]string{"sample", "-F", "100001", "-p", "1"}, "-F 100001", "between 1 and"},
		{[]string{"sample", "-F", "x", "-p", "1"}, "-F", "see --help"},
		{[]string{"sample", "--off-cpu", "--wall", "-p", "1"}, "--off-cpu and --wall", "give one"},
		{[]string{"sample", "--off-cpu", "--off-cpu-prob", "1.5", "-p", "1"}, "--off-cpu-prob 1.5", "give a probability"},
		{[]string{"sample", "--off-cpu-prob", "0.1", "-p", "1"}, "--off-cpu-prob", "needs --off-cpu or --wall"},
		{[]string{"demo", "-F", "0"}, "-F 0", "between 1 and"},
		{[]string{"demo", "-F", "1000000"}, "-F 1000000", "between 1 and"},
		{[]string{"calibrate", "--runs", "1"}, "--runs 1", "want 2 to 100"},
		{[]string{"calibrate", "--runs", "0"}, "--runs 0", "want 2 to 100"},
		{[]string{"calibrate", "--runs", "1000000"}, "--runs 1000000", "want 2 to 100"},
		{[]string{"time", "-u", "f", "-p", "1", "--max-probes", "0"}, "--max-probes 0", "want at least 1"},
		{[]string{"time", "-u", "f", "-p", "1", "--max-probes", "-1"}, "--max-probes -1", "want at least 1"},
		{[]string{"time", "-u", "f", "-p", "1", "--max-probes", "1e3"}, "--max-probes", "see --help"},
		{[]string{"time", "-u", "f", "-p", "-5"}, "-p -5", "positive"},
		{[]string{"sample", "-p", "-5"}, "-p -5", "positive"},
		{[]string{"time", "-u", "f", "-p", "x"}, "-p", "see --help"},
	} {
		add(tc{name: strings.Join(c.args, " "), args: c.args, exit: 2, wrong: c.wrong, expect: c.expect})
	}

	// Counts given to estimate.
	for _, flag := range []string{"calls", "ticks", "ticks-sq", "samples", "hits"} {
		for _, v := range []string{"-1", "x", "1.5", "18446744073709551616", "", "1e3", "0x10"} {
			args := []string{"estimate", "--resolution", "1ms", "--calls", "100", "--ticks", "40"}
			if flag == "samples" || flag == "hits" {
				args = []string{"estimate", "--samples", "100", "--hits", "4"}
			}
			// Replace (or add) the flag's value.
			replaced := false
			for i := 0; i+1 < len(args); i++ {
				if args[i] == "--"+flag {
					args[i+1], replaced = v, true
				}
			}
			if !replaced {
				args = append(args, "--"+flag, v)
			}
			add(tc{name: "estimate --" + flag + " " + v, args: args, exit: 2, wrong: "--" + flag, expect: wantCount})
		}
	}

	// Values that are numbers but impossible, and goals that cannot be met.
	for _, c := range []struct {
		args          []string
		wrong, expect string
	}{
		{[]string{"estimate", "--resolution", "1ms", "--calls", "10", "--ticks", "2", "--ticks-sq", "5"}, "squared ticks 5", "must be at most 4"},
		{[]string{"estimate", "--resolution", "1ms", "--calls", "10", "--ticks", "2", "--ticks-sq", "1"}, "squared ticks 1", "must be at least 2"},
		{[]string{"estimate", "--resolution", "1ms", "--calls", "2", "--ticks", "10", "--ticks-sq", "10"}, "squared ticks 10", "must be at least"},
		{[]string{"estimate", "--resolution", "1ms", "--calls", "0", "--ticks", "5"}, "no calls", "calls must be at least 1"},
		{[]string{"estimate", "--resolution", "1ms", "--calls", "0", "--ticks", "0"}, "no calls", "measure longer"},
		{[]string{"estimate", "--samples", "10", "--hits", "11"}, "11 hits out of 10", "cannot exceed"},
		{[]string{"estimate", "--samples", "0", "--hits", "0"}, "samples", "."},
		{[]string{"plan", "--resolution", "1h", "--expect", "1ns", "--precision", "0.0000001%"}, "executions", "looser precision"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "1.5ms", "--digits", "15"}, "executions", "looser precision"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "20us", "--precision", "5%", "--loop", "1us"}, "--loop 1us is shorter", "at least as long"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2ms", "--precision", "5%", "--loop", "1ms"}, "--loop 1ms is shorter", "at least as long"},
	} {
		add(tc{name: strings.Join(c.args, " "), args: c.args, exit: 2, wrong: c.wrong, expect: c.expect})
	}

	// Percentages other than confidence.
	for _, c := range []struct {
		args          []string
		wrong, expect string
	}{
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "0"}, "--precision", "e.g. 5%"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "abc"}, "--precision", wantPct},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "-5%"}, "--precision", wantPct},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "5"}, "--precision", wantPct},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", ""}, "--precision", wantPct},
		{[]string{"plan", "--from", fx("pilot.json"), "--precision", "100%"}, "--precision", "such as 5%"},
		{[]string{"plan", "--from", fx("pilot.json"), "--precision", "0"}, "--precision", "such as 5%"},
		{[]string{"time", "-u", "f", "-p", "1", "--precision", "0"}, "--precision", "such as 5%"},
		{[]string{"time", "-u", "f", "-p", "1", "--precision", "100%"}, "--precision", "such as 5%"},
		{[]string{"time", "-u", "f", "-p", "1", "--precision", "x"}, "--precision", "such as 5%"},
		{[]string{"demo", "--precision", "0"}, "--precision", "e.g. 5%"},
		{[]string{"demo", "--precision", "100%"}, "--precision", "e.g. 5%"},
		{[]string{"demo", "--precision", "x"}, "--precision", wantPct},
	} {
		add(tc{name: strings.Join(c.args, " "), args: c.args, exit: 2, wrong: c.wrong, expect: c.expect})
	}

	// Rates.
	for _, v := range []string{"", "0/s", "-1/s", "abc", "10/fortnight", "1/", "Hz", "inf/s", "1e3/s", "0Hz", "nan", "1/s/s"} {
		add(tc{name: "plan --rate " + v, args: []string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "5%", "--rate", v},
			exit: 2, wrong: "--rate", expect: `1000/s`})
		add(tc{name: "plan --from --rate " + v, args: []string{"plan", "--from", fx("pilot.json"), "--rate", v},
			exit: 2, wrong: "--rate", expect: `1000/s`})
	}

	// Flags that do not go together, and missing ones.
	for _, c := range []struct {
		args          []string
		wrong, expect string
	}{
		{[]string{"plan"}, "plan needs --resolution", "e.g."},
		{[]string{"plan", "--resolution", "1ms"}, "plan needs --expect", "e.g."},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2ms"}, "exactly one of", "--precision"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2ms", "--precision", "5%", "--digits", "3"}, "exactly one of", "--precision"},
		{[]string{"plan", "--resolution", "1ms", "--expect", "2.5ms", "--precision", "5%", "--rate", "1/s", "--loop", "1s"}, "not both", "one of them"},
		{[]string{"plan", "--from", fx("pilot.json"), "--resolution", "1ms"}, "--resolution does not go with --from", "give --precision"},
		{[]string{"plan", "--from", fx("pilot.json"), "--precision", "5%", "--abs-error", "1us"}, "not both", "--precision or --abs-error"},
		{[]string{"plan", "--from", fx("cpu.pb.gz"), "--abs-error", "1us"}, "--abs-error", "give --precision"},
		{[]string{"plan", "extra"}, "no arguments", "see"},
		{[]string{"estimate"}, "nothing to estimate", "give --resolution"},
		{[]string{"estimate", "--resolution", "1ms", "--samples", "10"}, "cannot be combined", "give one kind"},
		{[]string{"estimate", "--resolution", "1ms"}, "need --calls and --ticks", "--batches"},
		{[]string{"estimate", "--resolution", "1ms", "--calls", "10"}, "--calls needs --ticks", "e.g."},
		{[]string{"estimate", "--resolution", "1ms", "--ticks", "10"}, "--ticks needs --calls", "e.g."},
		{[]string{"estimate", "--calls", "10", "--ticks", "2"}, "need --resolution", "e.g."},
		{[]string{"estimate", "--resolution", "1ms", "--calls", "1", "--ticks", "1", "--batches", fx("batches.txt")}, "not both", "batches hold"},
		{[]string{"estimate", "--samples", "10"}, "need both", "--hits"},
		{[]string{"estimate", "--samples", "10", "--hits", "1", "--period", "1ms", "--elapsed", "1s"}, "not both", "one of them"},
		{[]string{"estimate", "--resolution", "1ms", "--calls", "1", "--ticks", "1", "--interval", "bogus"}, "--interval", "wald, wilson or exact"},
		{[]string{"time"}, "no target", "give at least one"},
		{[]string{"time", "-u", "f", "-p", "1", "--", "true"}, "not both", "-p PID or -- CMD"},
		{[]string{"time", "-u", "f", "extra"}, "unexpected argument", "after --"},
		{[]string{"time", "-u", "f", "-p", "1", "--clock", "bogus"}, "--clock", "jiffies"},
		{[]string{"time", "-u", "f", "-p", "1", "--clock", "tick:abc"}, "--clock", "e.g. tick:1ms"},
		{[]string{"time", "-u", "f", "-p", "1", "--clock", "tick:0ms"}, "--clock", "at least 1us"},
		{[]string{"time", "-u", "f", "-p", "1", "--clock", "tick:99999999999999999999h"}, "--clock", "e.g. tick:1ms"},
		{[]string{"time", "-k", "x", "-p", "1", "--attach", "bogus"}, "--attach", "kprobe, fentry or auto"},
		{[]string{"time", "-u", "f", "-p", "1", "--clock", "ns", "--validate"}, "--validate", "--clock jiffies"},
		{[]string{"sample"}, "exactly one target", "-p PID"},
		{[]string{"sample", "-p", "1", "--all"}, "exactly one target", "-p PID"},
		{[]string{"sample", "extra"}, "put the command after --", "tickprof sample"},
		{[]string{"sample", "--all", "--count", "main.f", "-o", ""}, "--count main.f", "name the file"},
		{[]string{"report"}, "one profile FILE", "got 0"},
		{[]string{"report", "a", "b"}, "one profile FILE", "got 2"},
		{[]string{"report", "--from", "now-1h", "a"}, "--from: only with --pyroscope", "URL"},
		{[]string{"report", "-o", "x.pb.gz", "a"}, "-o: only with --pyroscope", "writes nothing"},
		{[]string{"report", "--pyroscope", "http://127.0.0.1:1"}, "needs --query", "SELECTOR"},
		{[]string{"report", "--pyroscope", "http://127.0.0.1:1", "--query", "x"}, `--query "x"`, "label selector such as"},
		{[]string{"report", "--pyroscope", "http://127.0.0.1:1", "--query", "{a=\"b\"}", "--profile", "heap"}, "--profile", "cpu, time or off-cpu"},
		{[]string{"diff", "--sample-type", "heap", "a", "b"}, "--sample-type", "samples, off_cpu or wall"},
		{[]string{"report", "--pyroscope", "http://127.0.0.1:1", "--query", "{a=\"b\"}", "--from", "yesterday"}, "--from", "RFC 3339"},
		{[]string{"report", "--pyroscope", "http://127.0.0.1:1", "--query", "{a=\"b\"}", "--from", "now", "--until", "now-1h"}, "is not after", "--from"},
		{[]string{"report", "--pyroscope", "http://127.0.0.1:1", "--query", "{a=\"b\"}", "--slice", "1ms"}, "--slice", "at least 1s"},
		{[]string{"report", "--pyroscope", "ftp://x", "--query", "{a=\"b\"}"}, "--pyroscope", "http or https"},
		{[]string{"diff", "--pyroscope", "http://127.0.0.1:1", "--query", "{a=\"b\"}"}, "needs --base-query", "--query SELECTOR"},
		{[]string{"diff", "--base-query", "{a=\"b\"}", "a", "b"}, "--base-query: only with --pyroscope", "URL"},
		{[]string{"diff", "a"}, "two profiles", "BASE and NEW"},
		{[]string{"diff"}, "two profiles", "BASE and NEW"},
		{[]string{"doctor", "extra"}, "no arguments", "see tickprof doctor --help"},
		{[]string{"calibrate", "extra"}, "no arguments", "see"},
		{[]string{"demo", "extra"}, "no arguments", "see"},
		{[]string{"calibrate", "--dir", "/etc/passwd"}, "not a directory", "give the directory"},
	} {
		add(tc{name: strings.Join(c.args, " "), args: c.args, exit: 2, wrong: c.wrong, expect: c.expect})
	}

	// Commands, help topics, shells, unknown flags.
	for _, c := range []struct {
		args          []string
		wrong, expect string
	}{
		{[]string{"foo"}, `unknown command "foo"`, "give one of"},
		{[]string{"tiem"}, `unknown command "tiem"`, "time"},
		{[]string{"help", "foo"}, `no help topic "foo"`, "give a command"},
		{[]string{"help", "plan", "extra"}, `no help topic`, "give a command"},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh"`, "bash, fish, powershell, zsh"},
		{[]string{"completion", "cmd.exe"}, `unknown command "cmd.exe"`, "bash"},
		{[]string{"completion", "bash", "extra"}, "no arguments", "see"},
		{[]string{"--bogus"}, "unknown flag: --bogus", "see --help"},
		{[]string{"-Z"}, "unknown shorthand flag", "see --help"},
	} {
		add(tc{name: strings.Join(c.args, " "), args: c.args, exit: 2, wrong: c.wrong, expect: c.expect})
	}
	for _, cmd := range []string{"plan", "estimate", "report", "diff", "sample", "time", "calibrate", "demo", "doctor"} {
		add(tc{name: cmd + " --bogus", args: []string{cmd, "--bogus"}, exit: 2, wrong: "unknown flag: --bogus", expect: "see --help"})
		if cmd != "time" && cmd != "demo" { // time --json takes a FILE; demo has no --json
			add(tc{name: cmd + " --json=maybe", args: []string{cmd, "--json=maybe"}, exit: 2, wrong: "--json", expect: "see --help"})
		}
	}

	// Files given to read: report, diff, plan --from, estimate --batches.
	readers := map[string]func(string) []string{
		"report":      func(f string) []string { return []string{"report", f} },
		"diff base":   func(f string) []string { return []string{"diff", f, fx("cpu.pb.gz")} },
		"diff new":    func(f string) []string { return []string{"diff", fx("cpu.pb.gz"), f} },
		"plan --from": func(f string) []string { return []string{"plan", "--from", f, "--precision", "5%"} },
	}
	for _, c := range []struct {
		file          string
		wrong, expect string
	}{
		{"/dev/zero", "character device", "give a file"},
		{"/dev/null", "character device", "give a file"},
		{fx("fifo"), "a FIFO", "give a file"},
		{fix, "a directory", "give a file"},
		{fx("missing"), "no such file", "."},
		{fx("empty"), "empty", "."},
		{fx("text.txt"), "not a pprof profile", "."},
		{fx("goroutine.pb.gz"), "goroutine profile", "give a CPU profile"},
		{fx("heap.pb.gz"), "heap profile", "give a CPU profile"},
		{fx("diffbase.pb.gz"), "negative", "tickprof diff BASE NEW"},
		{fx("badgzip.pb.gz"), "not a pprof profile", "gzip"},
	} {
		for name, args := range readers {
			if name == "plan --from" && (c.file == fx("text.txt")) {
				continue
			}
			add(tc{name: name + " " + filepath.Base(c.file), args: args(c.file), exit: 1, wrong: c.wrong, expect: c.expect})
		}
	}
	for _, c := range []struct {
		file          string
		wrong, expect string
	}{
		{fx("negtime.pb.gz"), "not an interval of times", "0 <= low <= mean <= high"},
	} {
		add(tc{name: "report negtime", args: []string{"report", c.file}, exit: 1, wrong: c.wrong, expect: c.expect})
		add(tc{name: "diff negtime", args: []string{"diff", c.file, c.file}, exit: 1, wrong: c.wrong, expect: c.expect})
		add(tc{name: "plan --from negtime", args: []string{"plan", "--from", c.file}, exit: 1, wrong: c.wrong, expect: c.expect})
	}
	for _, c := range []struct {
		file          string
		wrong, expect string
	}{
		{"conf7.json", "confidence = 7", "strictly between 0 and 1"},
		{"confneg.json", "confidence = -0.5", "strictly between 0 and 1"},
		{"conf1.json", "confidence = 1", "strictly between 0 and 1"},
		{"negmean.json", "mean_ns, low_ns, high_ns", "low <= mean <= high"},
		{"inverted.json", "mean_ns, low_ns, high_ns", "low <= mean <= high"},
		{"negdur.json", "duration_s = -3", "from 0 to a century"},
		{"hugedur.json", "duration_s = 1e+300", "from 0 to a century"},
		{"notargets.json", `no "targets"`, "give the file"},
		{"garbage.json", "not a tickprof time JSON", "."},
		{"strtype.json", "not a tickprof time JSON", "."},
		{"overflow.json", "not a tickprof time JSON", "."},
	} {
		add(tc{name: "plan --from " + c.file, args: []string{"plan", "--from", fx(c.file)}, exit: 1, wrong: c.wrong, expect: c.expect})
	}
	for _, c := range []struct {
		content       string
		wrong, expect string
	}{
		{"1 2 3\n", "got 3 fields", "two integers"},
		{"1\n", "got 1 fields", "two integers"},
		{"x 2\n", "calls", "non-negative integer"},
		{"1 -2\n", "negative", "non-negative integers"},
		{"0 5\n", "at least one call", "calls ticks"},
		{"# only a comment\n", "no batches", "calls ticks"},
		{"\xff\xfe 1\n", "not text", "calls ticks"},
		{"18446744073709551616 1\n", "not a non-negative integer", "calls ticks"},
		{strings.Repeat("1", 2<<20) + " 1\n", "line too long", "calls ticks"},
	} {
		name := fmt.Sprintf("batches-%d.txt", len(cs))
		os.WriteFile(fx(name), []byte(c.content), 0o644)
		add(tc{name: "estimate --batches " + strconv.Quote(c.content[:min(len(c.content), 20)]), args: []string{"estimate", "--resolution", "1ms", "--batches", fx(name)},
			exit: 2, wrong: c.wrong, expect: c.expect})
	}
	for _, f := range []string{"/dev/zero", fx("fifo"), fix, fx("missing")} {
		add(tc{name: "estimate --batches " + filepath.Base(f), args: []string{"estimate", "--resolution", "1ms", "--batches", f},
			exit: 2, wrong: "--batches", expect: `give a file|no such file`})
	}

	// Outputs that must not be written: links, missing directories,
	// directories, devices, FIFOs.
	outputs := map[string]func(string) []string{
		"sample -o":   func(f string) []string { return []string{"sample", "-p", "1", "-o", f} },
		"time --json": func(f string) []string { return []string{"time", "-u", "f", "-p", "1", "--json", f} },
		"time -o":     func(f string) []string { return []string{"time", "-u", "f", "-p", "1", "-o", f} },
	}
	for _, c := range []struct {
		file          string
		wrong, expect string
	}{
		{fx("link-to-secret"), "symbolic link", "regular file"},
		{fx("dangling-link"), "symbolic link", "regular file"},
		{fx("missing-dir/out"), "no such file", "writable path"},
		{fix + "/", "file name is needed", "writable path"},
		{"/dev/null", "character device", "regular file"},
		{fx("fifo"), "a FIFO", "regular file"},
		{fx("linkdir/out"), "", "writable path"},
	} {
		for name, args := range outputs {
			want := c.wrong
			if want == "" {
				want = "not followed"
			}
			add(tc{name: name + " " + strings.TrimPrefix(c.file, fix), args: args(c.file), exit: 2, wrong: want, expect: c.expect,
				root: strings.Contains(c.file, "linkdir")})
		}
	}
	add(tc{name: "demo --dir missing", args: []string{"demo", "--dir", fx("missing-dir")}, exit: 2, wrong: "no such file", expect: "writable path"})
	add(tc{name: "demo --dir with links", args: []string{"demo", "--dir", fx("demo-links")}, exit: 2, wrong: "symbolic link", expect: "regular file"})
	for name, args := range outputs {
		add(tc{name: name + " foreign file in sticky dir", args: args(fx("sticky/theirs")), exit: 2,
			wrong: "belongs to uid 65534 in a sticky directory", expect: "choose another name", root: true})
	}

	// Processes that cannot be observed: wrong reasons are bugs too.
	for _, c := range []struct {
		args          []string
		wrong, expect string
	}{
		{[]string{"time", "-u", "f", "-p", "2"}, "kernel thread", "user process"},
		{[]string{"sample", "-p", "2", "-o", ""}, "kernel thread", "user process"},
		{[]string{"time", "-s", "read", "-p", "2"}, "kernel thread", "user process"},
		{[]string{"time", "-u", "f", "-p", "2147483647"}, "no such process", "check the PID"},
		{[]string{"sample", "-p", "2147483647", "-o", ""}, "no such process", "PID"},
		{[]string{"sample", "-p", "99999999999", "-o", ""}, "no such process", "PID"},
		{[]string{"time", "-s", "", "-p", sleeperPID}, "empty system call name", "such as -s read"},
		{[]string{"time", "-s", "bogus", "-p", sleeperPID}, `unknown system call "bogus"`, "-s all"},
		{[]string{"time", "-s", "99999", "-p", sleeperPID}, `unknown system call "99999"`, "-s all"},
		{[]string{"time", "-u", "", "-p", sleeperPID}, "names no symbol", "SYMBOL, LIB:SYMBOL or PATH:SYMBOL"},
		{[]string{"time", "-u", ":", "-p", sleeperPID}, "names no symbol", "SYMBOL, LIB:SYMBOL or PATH:SYMBOL"},
		{[]string{"time", "-u", "libc:", "-p", sleeperPID}, "names no symbol", "SYMBOL, LIB:SYMBOL or PATH:SYMBOL"},
		{[]string{"time", "-u", "nosuchlib:f", "-p", sleeperPID}, `no library matching "nosuchlib"`, "give the library's path"},
		{[]string{"time", "-u", "/nonexistent:f", "-p", sleeperPID}, "/nonexistent", "no such file"},
		{[]string{"time", "-u", "nosuchsym", "-p", sleeperPID}, `symbol "nosuchsym" not found`, "nm"},
		{[]string{"time", "-u", "zz*", "-p", sleeperPID}, `"zz*" not found`, "nm"},
		{[]string{"time", "-u", "[", "-p", sleeperPID}, `bad glob "["`, "shell pattern such as"},
		{[]string{"sample", "--count", "", "-p", sleeperPID, "-o", ""}, "names no function", "e.g. main.work"},
		{[]string{"time", "-u", fx("fifo") + ":f", "-p", sleeperPID}, "a FIFO, not a regular file", "give an executable"},
		{[]string{"time", "-u", "/dev/zero:f", "-p", sleeperPID}, "a character device, not a regular file", "give an executable"},
		{[]string{"time", "-u", fix + ":f", "-p", sleeperPID}, "a directory, not a regular file", "give an executable"},
		{[]string{"time", "-u", fx("text.txt") + ":f", "-p", sleeperPID}, "text.txt", "."},
		{[]string{"sample", "--count", fx("fifo") + ":f", "-p", sleeperPID, "-o", ""}, "a FIFO, not a regular file", "give an executable"},
		{[]string{"sample", "--count", "nosuchsym", "-p", sleeperPID, "-o", ""}, `no function "nosuchsym"`, "nm"},
	} {
		add(tc{name: strings.Join(c.args, " "), args: c.args, exit: 1, wrong: c.wrong, expect: c.expect, root: true})
	}
	return cs
}

// TestBadInput runs every case and checks exit status, one line, what is
// wrong, what is expected, no panic, done within caseTimeout.
func TestBadInput(t *testing.T) {
	cs := cases()
	if len(cs) < 300 {
		t.Fatalf("%d cases, want at least 300", len(cs))
	}
	t.Logf("%d cases", len(cs))
	root := os.Geteuid() == 0
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.root && !root {
				t.Skip("needs root")
			}
			check(t, c)
		})
	}
}

func check(t *testing.T, c tc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, c.args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(work, "cache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tickprof %q still running after %v (hang); stderr: %s", c.args, caseTimeout, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run: %v", err)
	}
	msg := strings.TrimRight(stderr.String(), "\n")
	if strings.Contains(msg, "panic:") || regexp.MustCompile(`goroutine \d+ \[`).MatchString(msg) {
		t.Fatalf("tickprof %q panicked:\n%s", c.args, msg)
	}
	if code != c.exit {
		t.Errorf("tickprof %q: exit status %d, want %d; stderr: %s", c.args, code, c.exit, msg)
	}
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "tickprof: ") {
		t.Errorf("tickprof %q: want one line \"tickprof: ...\" on stderr, got:\n%s", c.args, msg)
	}
	if !strings.Contains(msg, c.wrong) {
		t.Errorf("tickprof %q: error %q does not say %q", c.args, msg, c.wrong)
	}
	if !regexp.MustCompile(c.expect).MatchString(msg) {
		t.Errorf("tickprof %q: error %q does not say what is expected (%s)", c.args, msg, c.expect)
	}
}

// TestDoctorWithoutPrivileges: doctor run as an unprivileged user prints
// its table with what is missing and succeeds.
func TestDoctorWithoutPrivileges(t *testing.T) {
	setpriv := testtarget.Setpriv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "doctor").CombinedOutput()
	if err != nil {
		t.Fatalf("doctor as nobody: %v\n%s", err, out)
	}
	for _, want := range []string{"CAPABILITY", "privileges", "NO", "memlock", "TARGET KIND", "not known"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor as nobody: output lacks %q:\n%s", want, out)
		}
	}
}

// TestForeignProcessWithBPFCaps: a user holding CAP_BPF and CAP_PERFMON
// (ambient) may not time or sample root's process (perf's access check).
func TestForeignProcessWithBPFCaps(t *testing.T) {
	setpriv := testtarget.Setpriv(t)
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := strconv.Itoa(sleeper.Process.Pid)
	for _, args := range [][]string{
		{"time", "-s", "wait4", "-p", pid, "--duration", "1s"},
		{"sample", "-p", pid, "--duration", "1s", "-o", ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		argv := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups",
			"--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon", bin}, args...)
		c := exec.CommandContext(ctx, setpriv, argv...)
		c.Dir = os.TempDir()
		out, err := c.CombinedOutput()
		cancel()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("%v as a user with CAP_BPF+CAP_PERFMON: %v, want exit 1:\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "runs as uid 0") || !strings.Contains(string(out), "CAP_SYS_PTRACE") {
			t.Errorf("%v: output does not refuse root's process with the reason:\n%s", args, out)
		}
	}
}

// writeFixtures writes the files the cases read and the links and special
// files they must not write through.
func writeFixtures() error {
	for _, d := range []string{fix, work, filepath.Join(fix, "demo-links")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	fn := &profile.Function{ID: 1, Name: "main.work"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn}}}
	prof := func(types []*profile.ValueType, period *profile.ValueType, vals ...[]int64) *profile.Profile {
		p := &profile.Profile{SampleType: types, PeriodType: period, Period: 1,
			Function: []*profile.Function{fn}, Location: []*profile.Location{loc}}
		for _, v := range vals {
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: v})
		}
		return p
	}
	cpuT := []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	cpuP := &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	files := map[string]*profile.Profile{
		"cpu.pb.gz":       prof(cpuT, cpuP, []int64{40, 400000000}, []int64{2, 20000000}),
		"goroutine.pb.gz": prof([]*profile.ValueType{{Type: "goroutine", Unit: "count"}}, &profile.ValueType{Type: "goroutine", Unit: "count"}, []int64{7}),
		"heap.pb.gz":      prof([]*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}}, &profile.ValueType{Type: "space", Unit: "bytes"}, []int64{3, 300}),
		"diffbase.pb.gz":  prof(cpuT, cpuP, []int64{40, 400000000}, []int64{-12, -120000000}),
	}
	files["cpu.pb.gz"].Period = 10000000
	tp := prof([]*profile.ValueType{{Type: "calls", Unit: "count"}, {Type: "ticks", Unit: "count"}, {Type: "wall", Unit: "nanoseconds"}}, &profile.ValueType{Type: "wall", Unit: "nanoseconds"}, []int64{10, 3, 1000})
	tp.Sample[0].Label = map[string][]string{"target": {"f"}}
	tp.Sample[0].NumLabel = map[string][]int64{"mean_ns": {-100}, "low_ns": {-120}, "high_ns": {-80}}
	files["negtime.pb.gz"] = tp
	for name, p := range files {
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(fx(name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	var bad bytes.Buffer
	zw := gzip.NewWriter(&bad)
	zw.Write([]byte("not a profile at all"))
	zw.Close()
	b := bad.Bytes()
	os.WriteFile(fx("badgzip.pb.gz"), b[:len(b)-6], 0o644) // truncated gzip

	pilot := `{"clock":"ns","resolution_ns":1,"confidence":0.95,"duration_s":3,"targets":[{"target":"f","kind":"user","calls":1000,"ticks":100000,"mean_ns":100,"low_ns":95,"high_ns":105,"confidence":0.95,"clock":"ns","resolution_ns":1,"wall_ns":100000,"crossings":0,"orphans":0,"dropped_records":0}]}`
	jsons := map[string]string{
		"pilot.json":     pilot,
		"conf7.json":     strings.Replace(pilot, `"confidence":0.95,"duration_s"`, `"confidence":7,"duration_s"`, 1),
		"confneg.json":   strings.Replace(pilot, `"confidence":0.95,"clock"`, `"confidence":-0.5,"clock"`, 1),
		"conf1.json":     strings.Replace(pilot, `"confidence":0.95,"clock"`, `"confidence":1,"clock"`, 1),
		"negmean.json":   strings.Replace(strings.Replace(pilot, `"mean_ns":100`, `"mean_ns":-100`, 1), `"low_ns":95`, `"low_ns":-105`, 1),
		"inverted.json":  strings.Replace(pilot, `"low_ns":95`, `"low_ns":150`, 1),
		"negdur.json":    strings.Replace(pilot, `"duration_s":3`, `"duration_s":-3`, 1),
		"hugedur.json":   strings.Replace(pilot, `"duration_s":3`, `"duration_s":1e300`, 1),
		"notargets.json": `{"clock":"ns","confidence":0.95}`,
		"garbage.json":   `{"targets": [`,
		"strtype.json":   strings.Replace(pilot, `"calls":1000`, `"calls":"many"`, 1),
		"overflow.json":  strings.Replace(pilot, `"calls":1000`, `"calls":1e30`, 1),
	}
	for name, s := range jsons {
		if err := os.WriteFile(fx(name), []byte(s), 0o644); err != nil {
			return err
		}
	}
	os.WriteFile(fx("batches.txt"), []byte("100 40\n100 41\n"), 0o644)
	os.WriteFile(fx("empty"), nil, 0o644)
	os.WriteFile(fx("text.txt"), []byte("hello, world\n"), 0o644)
	if err := syscall.Mkfifo(fx("fifo"), 0o644); err != nil {
		return err
	}
	secret := fx("secret")
	os.WriteFile(secret, []byte("root's"), 0o600)
	os.Symlink(secret, fx("link-to-secret"))
	os.Symlink(fx("nowhere"), fx("dangling-link"))
	os.Symlink(secret, filepath.Join(fix, "demo-links", "demo-time.pb.gz"))
	if os.Geteuid() == 0 {
		// Another user's file in a sticky directory, and another user's
		// directory link in one.
		sticky := fx("sticky")
		os.Mkdir(sticky, 0o777)
		os.Chmod(sticky, 0o777|os.ModeSticky)
		os.WriteFile(filepath.Join(sticky, "theirs"), []byte("theirs"), 0o644)
		os.Chown(filepath.Join(sticky, "theirs"), 65534, 65534)
		os.Symlink(fix, filepath.Join(sticky, "d"))
		os.Lchown(filepath.Join(sticky, "d"), 65534, 65534)
		os.Symlink(filepath.Join(sticky, "d"), fx("linkdir"))
	}
	return nil
}
