// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/selfcost"
	"github.com/tickprof/tickprof/internal/termsafe"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/timing"
)

// meanInterval formats a mean with its interval: "1.23µs [1.20µs, 1.26µs]".
func meanInterval(r estimate.Result) string {
	m, lo, hi := units.Interval(r.Mean, r.Low, r.High)
	return m + " [" + lo + ", " + hi + "]"
}

// WriteTimeTable prints a timing run's results: one row per target, then
// the run; precision is the run's goal (0: none).
func WriteTimeTable(w io.Writer, r *timing.Result, precision float64) error {
	cols := timeColumnsOf(r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, cols.header())
	for i := range r.Targets {
		fmt.Fprintln(tw, cols.row(&r.Targets[i]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeQuantileNotes(w, r, cols.levels); err != nil {
		return err
	}
	writeRunLine(w, r, precision, cols.conf)
	writeRunNotes(w, r)
	writeFewBatchesNote(w, r)
	writeCorrectionNote(w, r, cols.corrected)
	return nil
}

// timeColumns are the columns of the time table that depend on the run:
// the quantiles, the extremes, the correction and the validation.
type timeColumns struct {
	conf      string    // the confidence, as a percentage
	levels    []float64 // the quantile levels
	extremes  bool      // MIN and MAX columns
	corrected bool      // RAW MEAN and OVERHEAD columns
	validate  bool      // EXACT MEAN and COVERED columns
}

// timeColumnsOf picks the columns for a run's table.
func timeColumnsOf(r *timing.Result) timeColumns {
	c := timeColumns{conf: units.Percent(r.Confidence), validate: r.Validate}
	for _, t := range r.Targets {
		c.corrected = c.corrected || t.Corrected
	}
	c.levels, c.extremes = quantileColumns(r)
	return c
}

// header is the table's header line.
func (c timeColumns) header() string {
	hdr := "TARGET\tCALLS\tMEAN\tINTERVAL (" + c.conf + ")\t±%\t"
	if c.extremes {
		hdr += "MIN\tMAX\t"
	}
	for _, p := range c.levels {
		hdr += strings.ToUpper(export.QuantileName(p)) + " [" + c.conf + "]\t"
	}
	if c.corrected {
		hdr += "RAW MEAN [" + c.conf + "]\tOVERHEAD [" + c.conf + "]\t"
	}
	hdr += "METHOD\tCROSSINGS\tORPHANS\tDROPPED\t"
	if c.validate {
		hdr += "EXACT MEAN [" + c.conf + "]\tCOVERED\t"
	}
	return hdr
}

// row is a target's line of the table.
func (c timeColumns) row(t *timing.TargetResult) string {
	mean, iv, pct, method := estimateCells(t)
	line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t", t.Name, t.Calls, mean, iv, pct)
	line += quantileCells(t, c.levels, c.extremes)
	if c.corrected {
		line += correctionCells(t)
	}
	line += fmt.Sprintf("%s\t%d\t%d\t%d\t", method, t.Crossings, t.Orphans, t.Dropped)
	if c.validate {
		line += validationCells(t)
	}
	return line
}

// estimateCells are a target's MEAN, INTERVAL, ±% and METHOD cells, or
// why it has no estimate.
func estimateCells(t *timing.TargetResult) (mean, iv, pct, method string) {
	if t.Err != "" {
		return "-", "no estimate: " + ShortErr(t.Err), "-", "-"
	}
	m, lo, hi := units.Interval(t.Estimate.Mean, t.Estimate.Low, t.Estimate.High)
	pct = "±" + units.Percent(t.Estimate.RelHalfWidth)
	if math.IsInf(t.Estimate.RelHalfWidth, 0) || math.IsNaN(t.Estimate.RelHalfWidth) {
		pct = "-" // a zero mean: only the upper bound says something
	}
	return m, "[" + lo + ", " + hi + "]", pct, t.Estimate.Method
}

// correctionCells are a target's RAW MEAN and OVERHEAD cells.
func correctionCells(t *timing.TargetResult) string {
	raw, ov := "-", "-"
	if t.Err == "" {
		raw = meanInterval(t.Raw)
	}
	if t.Corrected {
		ov = meanInterval(t.Overhead)
	}
	return raw + "\t" + ov + "\t"
}

// validationCells are a target's EXACT MEAN and COVERED cells.
func validationCells(t *timing.TargetResult) string {
	ex, cov := "-", "-"
	if t.Exact != nil && t.Exact.Mean.Calls > 0 {
		ex = meanInterval(t.Exact.Mean)
	}
	if t.Covered != nil {
		cov = map[bool]string{true: "yes", false: "NO"}[*t.Covered]
	}
	return ex + "\t" + cov + "\t"
}

// writeRunLine prints the run's line under the table: the clock, the
// confidence, how long and why it stopped, the goal, what was lost.
func writeRunLine(w io.Writer, r *timing.Result, precision float64, conf string) {
	fmt.Fprintf(w, "clock %s (d = %s), %s confidence, %s, stopped: %s", r.Clock, units.Ns(r.Resolution), conf, units.Ns(float64(r.Duration)), r.StopReason)
	if precision > 0 {
		fmt.Fprintf(w, ", precision goal ±%s", units.Percent(precision))
	}
	fmt.Fprintf(w, "; dropped records %d, stack failures %d (caller stacks the kernel could not record: stack map full or the walk faulted)\n", r.RingDrops, r.StackFails)
}

// writeRunNotes prints the budget, the Go probes' counts, the validation
// note, the clock warnings and the run's and targets' notes.
func writeRunNotes(w io.Writer, r *timing.Result) {
	if b := r.Budget; b != nil {
		writeBudget(w, b, units.Percent(r.Confidence))
	}
	if g := r.Go; g != nil {
		writeGoCounts(w, g)
	}
	if r.Validate {
		fmt.Fprintln(w, export.ValidateNote)
	}
	for _, line := range export.ClockLines(r) {
		fmt.Fprintln(w, line)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	for _, t := range r.Targets {
		for _, n := range t.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", t.Name, n)
		}
	}
}

// writeGoCounts says what the Go probes skipped and dropped.
func writeGoCounts(w io.Writer, g *timing.GoStats) {
	fmt.Fprintf(w, "Go: %d entry firings skipped for stack growth (counted on re-entry), %d entries expired without a RET (panic or Goexit, counted as orphans)",
		g.Morestack, g.Expired)
	if g.NoGoroutine > 0 {
		fmt.Fprintf(w, ", %d firings without a readable goroutine", g.NoGoroutine)
	}
	fmt.Fprintln(w)
}

// writeFewBatchesNote names the targets whose calls fell in too few
// batches (or budget windows) for their interval to be checked.
func writeFewBatchesNote(w io.Writer, r *timing.Result) {
	var few []string
	for _, t := range r.Targets {
		if t.Calls > 0 && t.Estimate.Batches < timing.MinCheckBatches {
			few = append(few, t.Name)
		}
	}
	if len(few) > 0 && r.Budget != nil {
		fmt.Fprintf(w, "note: %s: calls in fewer than %d windows: the interval rests on the spread of few windows (Student t with few degrees of freedom); time longer for a tighter one\n",
			strings.Join(few, ", "), timing.MinCheckBatches)
	} else if len(few) > 0 {
		fmt.Fprintf(w, "note: %s: fewer than %d polling batches, too few to check whether calls that overlap in time (several threads or goroutines in the function at once, crossing the same ticks) make the interval too narrow (Beilner eq. 11); time for at least %d x --interval, or shorten --interval\n",
			strings.Join(few, ", "), timing.MinCheckBatches, timing.MinCheckBatches)
	}
}

// writeCorrectionNote says whether the means include the probe overhead.
func writeCorrectionNote(w io.Writer, r *timing.Result, corrected bool) {
	for _, t := range r.Targets {
		if r.Correction == "on" && (t.Kind == timing.KindSyscall || t.Kind == timing.KindKernel) {
			fmt.Fprintln(w, "syscall and kernel-function means are as measured: they include the tracepoint or probe dispatch inside the window (no empty kernel path exists to calibrate it against)")
			break
		}
	}
	switch {
	case corrected:
		fmt.Fprintln(w, "MEAN is the measured (RAW) mean minus the probe overhead inside the calls (OVERHEAD), both uncertainties in its interval; --no-correct shows raw means only")
		writeOverheadMethods(w, r)
	case r.Correction == "off":
		fmt.Fprintln(w, "means include tickprof's probe overhead (--no-correct)")
	case r.Correction == "none":
		fmt.Fprintln(w, "note: these means include tickprof's probe overhead; run `sudo tickprof calibrate` once and later runs subtract it")
	}
}

// writeOverheadMethods says, once per way, how the overheads subtracted were
// known.
func writeOverheadMethods(w io.Writer, r *timing.Result) {
	var echo, rng, constant []string
	for _, t := range r.Targets {
		if !t.Corrected {
			continue
		}
		switch t.Overhead.Method {
		case "echo":
			echo = append(echo, t.Name)
		case "pattern-range":
			rng = append(rng, t.Name)
		default:
			constant = append(constant, t.Name)
		}
	}
	if len(echo) > 0 {
		fmt.Fprintf(w, "OVERHEAD of %s: measured in this run on its own calls (echo windows: a second probe after the entry times the probe's own path; `tickprof calibrate`'s model turns it into the whole overhead, the model's error in the interval; docs/overhead.md)\n", strings.Join(echo, ", "))
	}
	if len(rng) > 0 {
		why := "no echo window yet, or no echo site"
		switch {
		case r.Budget != nil:
			why = "under --overhead no echo runs"
		case r.Clock == "jiffies":
			why = "the jiffies clock: an echo needs the entry's ns reading"
		}
		fmt.Fprintf(w, "OVERHEAD of %s: not measured in this run (%s): the range of every call pattern calibrated, subtracted as a bound\n", strings.Join(rng, ", "), why)
		writeRangeLimits(w, r)
	}
	if len(constant) > 0 {
		fmt.Fprintf(w, "OVERHEAD of %s: the calibration's one constant, measured in a tight loop; it misses calls after waits: run `tickprof calibrate` again for the in-call model\n", strings.Join(constant, ", "))
	}
}

// writeRangeLimits says, for each target whose overhead was subtracted as
// the calibrated patterns' range, when that range alone keeps its mean's
// interval wider than ±25%: no run length can narrow it then.
func writeRangeLimits(w io.Writer, r *timing.Result) {
	for _, t := range r.Targets {
		o := t.Overhead
		if !t.Corrected || o.Method != "pattern-range" {
			continue
		}
		half := (o.High - o.Low) / 2
		if half <= 0.25*math.Max(t.Estimate.Mean, 0) {
			continue
		}
		var how string
		switch {
		case r.Clock == "jiffies":
			how = "with the ns clock (the default for functions), echo windows measure it in the run (to within the in-call model's error, docs/overhead.md)"
		case r.Budget != nil:
			how = "without --overhead, echo windows measure it in the run (to within the in-call model's error, docs/overhead.md)"
		case t.Echo != nil:
			how = "a longer run lets echo windows measure it (to within the in-call model's error, docs/overhead.md)"
		default:
			how = "its entry has no site for an echo (docs/overhead.md)"
		}
		fmt.Fprintf(w, "note: %s: the probe's own cost inside its calls is known only to [%s, %s], so no run length narrows its MEAN below ±%s: %s\n",
			t.Name, units.Ns(o.Low), units.Ns(o.High), units.Ns(half), how)
	}
}

// ShortErr shortens an error for a table cell: up to its first colon, or
// 40 characters.
func ShortErr(s string) string {
	if i := strings.IndexByte(s, ':'); i > 0 && i < 40 {
		return s[:i]
	}
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := termsafe.Unwrap(w).(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// WriteTimeOutputs prints a timing run's table (precision: the goal, 0
// for none) and writes its JSON and pprof profile where asked ("": not).
// A file that cannot be written is one error after the table.
func WriteTimeOutputs(out io.Writer, run *timing.Result, precision float64, jsonPath, pprofPath string) error {
	if err := WriteTimeTable(out, run, precision); err != nil {
		return err
	}
	var errs []string
	if jsonPath != "" {
		cost := TimeCost(run)
		if err := export.WriteTimeJSONFileCost(jsonPath, run, &cost); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if pprofPath != "" {
		if err := export.WriteTimeProfile(pprofPath, run); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		// One line: the table above holds the results all the same.
		return fmt.Errorf("%s (the results are in the table above; check the output path)", strings.Join(errs, "; "))
	}
	return nil
}

// writeBudget says what an overhead budget did: the duty cycle, the
// windows, the projected slowdown with its interval, the call rates.
func writeBudget(w io.Writer, b *timing.BudgetResult, conf string) {
	how := "probed in random windows"
	if !b.Binding {
		how = "the budget did not bind: probed all the time"
	}
	fmt.Fprintf(w, "overhead budget %s: %s, attached %s of the time over %d windows; projected slowdown %s [%s, %s] (%s; probe cost %s per call)\n",
		units.Percent(b.Budget), how, units.Percent(b.Duty), b.Windows,
		units.Percent(b.Slowdown.Mean), units.Percent(b.Slowdown.Low), units.Percent(b.Slowdown.High), conf, units.Ns(b.Cost.Mean))
	if b.Censored > 0 {
		fmt.Fprintf(w, "%d calls were still running when their window's probes were detached: the means leave them out and lean toward short calls\n", b.Censored)
	}
}

// TimeCost is this process's cost so far, with the timing programs' run
// time when the kernel's BPF statistics were on (kernel.bpf_stats_enabled:
// a timing run does not turn them on itself, since they add two clock
// reads to every probe hit, inside the timed calls).
func TimeCost(run *timing.Result) selfcost.Cost {
	c, _ := selfcost.Self() // a partial cost (no wall time) is still the cost
	if run != nil && selfcost.KernelStatsOn() {
		c.AddBPF(run.BPFRuntime, 0)
	}
	return c
}
