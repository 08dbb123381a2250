// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tickprof/tickprof/internal/safefile"
)

// The markers around the generated part of the document.
const (
	beginMark = "<!-- coverage table: begin (written by `make coverage`) -->"
	endMark   = "<!-- coverage table: end -->"
)

// section is the generated part of the document: when and where the suite
// ran, and the table.
func section(res []caseRuns, tbl string, o options, began time.Time, took time.Duration) string {
	lmin, lmax, failed := math.Inf(1), math.Inf(-1), 0
	for _, cr := range res {
		failed += len(cr.failures)
		for _, oc := range cr.outcomes {
			lmin = math.Min(lmin, math.Min(oc.load0, oc.load1))
			lmax = math.Max(lmax, math.Max(oc.load0, oc.load1))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s (UTC), tickprof %s, kernel %s, %s; %d runs per case",
		began.UTC().Format("2006-01-02 15:04"), command("git", "describe", "--always", "--dirty"),
		command("uname", "-r"), cpuModel(), o.runs)
	if o.scale != 1 {
		fmt.Fprintf(&b, ", run lengths ×%g", o.scale)
	}
	if o.calibrate {
		b.WriteString(", calibrated by `tickprof calibrate` at the start")
	}
	if o.extra != "" {
		fmt.Fprintf(&b, ", `tickprof time %s`", o.extra)
	}
	fmt.Fprintf(&b, "; %d runs failed; the suite took %.0f min. The machine's 1-minute load average over the suite: %.1f–%.1f.\n\n",
		failed, took.Minutes(), lmin, lmax)
	b.WriteString(tbl)
	return b.String()
}

// updateDoc replaces the part of the document between the markers.
func updateDoc(path, body string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no table markers (%q ... %q)", path, beginMark, endMark)
	}
	doc := s[:i+len(beginMark)] + "\n\n" + body + "\n" + s[j:]
	if err := safefile.WriteFile(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, doc); return err }); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	logf("wrote %s", path)
	return nil
}

// writeRaw writes one tab-separated line per run and figure.
func writeRaw(path string, res []caseRuns) error {
	var b bytes.Buffer
	b.WriteString("case\trun\tload_start\tload_end\twall_s\tcalls_counted\tcalls_made\tfigure\ttruth_ns\testimate_ns\tlow_ns\thigh_ns\theld\n")
	for _, cr := range res {
		for i, o := range cr.outcomes {
			for _, c := range o.checks {
				fmt.Fprintf(&b, "%s\t%d\t%.2f\t%.2f\t%.2f\t%d\t%.0f\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%v\n",
					cr.c.name, i+1, o.load0, o.load1, o.wall.Seconds(), o.calls, o.targetCalls,
					c.name, c.truth, c.est, c.low, c.high, c.held)
			}
		}
		for _, f := range cr.failures {
			fmt.Fprintf(&b, "%s\tfailed\t%q\n", cr.c.name, f)
		}
	}
	if err := safefile.WriteFile(path, 0o644, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err }); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// command returns the trimmed output of a command, or "unknown".
func command(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// cpuModel returns the CPU model and count of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	model, n := "unknown CPU", 0
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			model = strings.TrimSpace(v)
			n++
		}
	}
	return fmt.Sprintf("%s × %d", model, n)
}
