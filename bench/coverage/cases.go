// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"
)

// tcase is one call pattern of the suite: a target, how tickprof times it,
// and which of its figures are judged.
type tcase struct {
	// name is the case's short name (the -cases flag, the raw file).
	name string
	// title is its row in the table.
	title string
	// goTarget runs testdata/coverage/chanwait instead of coverage.c.
	goTarget bool
	// mode is coverage.c's MODE and ARG.
	mode []string
	// probe is what `tickprof time` is given before --json.
	probe []string
	// syscall: the truth is the exact (ns) mean of the same calls that
	// --validate reports, not the target's own file.
	syscall bool
	// quantiles: the quantiles are judged in the short test as well as
	// the mean (all quantiles tickprof reports are tabulated).
	quantiles bool
	// seconds is the target's run length in the suite; short its run
	// length in the short test (0: not in it).
	seconds, short float64
}

// cases are the suite's call patterns, in the order of the table. Every
// one runs with tickprof's default clock (ns for -u, jiffies for -s) and
// default correction.
func cases() []tcase {
	handler := []string{"-u", "cov_handler"}
	return []tcase{
		{name: "sleep-50us", title: "10 µs handler after 50 µs sleeps", mode: []string{"sleep", "50"},
			probe: handler, seconds: 5, short: 3},
		{name: "sleep-2ms", title: "10 µs handler after 2 ms sleeps", mode: []string{"sleep", "2000"},
			probe: handler, seconds: 6, short: 4},
		{name: "sleep-10ms", title: "10 µs handler after 10 ms sleeps", mode: []string{"sleep", "10000"},
			probe: handler, seconds: 8, short: 5},
		{name: "b2b", title: "1–3 µs calls back to back", mode: []string{"b2b"},
			probe: []string{"-u", "cov_short"}, quantiles: true, seconds: 5, short: 3},
		{name: "contend", title: "10 µs handler, 3 spinning threads (4 runnable on 2 CPUs)", mode: []string{"contend", "3"},
			probe: handler, seconds: 5, short: 3},
		{name: "getppid", title: "getppid back to back (jiffies)", mode: []string{"getppid"},
			probe: []string{"-s", "getppid", "--validate"}, syscall: true, seconds: 4, short: 2},
		{name: "read", title: "read 64 B of /dev/zero back to back (jiffies)", mode: []string{"read"},
			probe: []string{"-s", "read", "--validate"}, syscall: true, seconds: 4, short: 2},
		{name: "overhead-5", title: "~100 ns function, --overhead 5%", mode: []string{"tiny"},
			probe: []string{"-u", "cov_tiny", "--overhead", "5%"}, seconds: 10, short: 8},
		{name: "overhead-1", title: "~100 ns function, --overhead 1%", mode: []string{"tiny"},
			probe: []string{"-u", "cov_tiny", "--overhead", "1%"}, seconds: 30},
		{name: "go-chan", title: "Go: 10 µs after a channel wait (1 ms feed)", goTarget: true,
			probe: []string{"-u", "main.Work"}, seconds: 5, short: 3},
	}
}

// selectCases returns the cases named in the comma-separated list only
// (all when it is empty), or an error naming one that does not exist.
func selectCases(all []tcase, only string) ([]tcase, error) {
	if only == "" {
		return all, nil
	}
	var out []tcase
	for _, n := range strings.Split(only, ",") {
		found := false
		for _, c := range all {
			if c.name == strings.TrimSpace(n) {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no case %q", n)
		}
	}
	return out, nil
}

// command returns the target's command line for a run of secs seconds
// writing its truth to truth.
func (c tcase) command(t targets, truth string, secs float64) []string {
	if c.goTarget {
		return []string{t.goBin, "-o", truth, "-for", fmt.Sprintf("%gs", secs)}
	}
	return append([]string{t.cBin, "-o", truth, "-s", fmt.Sprintf("%g", secs)}, c.mode...)
}
