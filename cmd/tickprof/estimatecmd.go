package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/units"
)

// estimateFlags are the raw values of the estimate command's flags.
type estimateFlags struct {
	resolution, calls, ticks, ticksSq, batches string
	contiguous                                 bool
	samples, hits, period, elapsed             string
	confidence, interval                       string
	asJSON                                     bool
}

// The flags of each mode, to reject mixtures.
var (
	estimateTimeFlags  = []string{"resolution", "calls", "ticks", "ticks-sq", "batches", "contiguous"}
	estimateShareFlags = []string{"samples", "hits", "period", "elapsed"}
)

// estimateHelp is the help text of the command.
const estimateHelp = `estimate runs tickprof's estimator on counts you give it.

Clock counts: an interval executed --calls times, timed with a clock of
resolution d, crossed --ticks clock ticks in all. Its mean is d*ticks/calls,
unbiased whatever the ratio of duration to resolution as long as the clock is
asynchronous with the program (Beilner eq. 6b; Chan; Lilja eq. 6.1). The
interval is the widest of the two-point model (each call crosses k or k+1
ticks), the observed variance (with --ticks-sq, the sum of squared per-call
tick counts) and the batch means (with --batches, robust to correlation
between successive calls); the output says which.

Sample counts: --hits of --samples PC samples fell in a function. Its share
of the time has an interval (Lilja 4.4.3, 6.3.1); with --period (the sampling
period) or --elapsed (the sampled time) the share becomes a time.

--batches FILE holds one "calls ticks" pair per line (the increments of the
counters over one polling period); text after # is a comment.

Durations are Go syntax with decimals (16.666ms, 40us, 1.5s); percentages
are 95% or 0.95. --interval picks the proportion interval: wald (the seeds'
formula, to reproduce their numbers), wilson or exact; the default uses the
exact interval below 30 events on the rarer side and Wilson's above.`

func newEstimateCmd() *cobra.Command {
	var f estimateFlags
	cmd := &cobra.Command{
		Use:   "estimate --resolution DUR (--calls N --ticks M [--ticks-sq S] | --batches FILE) | --samples N --hits H [--period DUR | --elapsed DUR]",
		Short: "Mean time with its confidence interval from tick counts, or a share from samples",
		Long:  estimateHelp,
		Example: `  # Chan's example: 400 of 2000 runs read one 16.666 ms tick
  tickprof estimate --resolution 16.666ms --calls 2000 --ticks 400 --interval wald

  # Lilja 6.2.3: 852 of 10482 measurements advanced a 40 us timer
  tickprof estimate --resolution 40us --calls 10482 --ticks 852 --json

  # batch means from polled counter increments
  printf '10000 56913\n10000 56855\n10000 56856\n' > batches.txt
  tickprof estimate --resolution 1ms --batches batches.txt --contiguous

  # Lilja 6.3.1: 12 of 800 samples every 10 ms, 99% confidence
  tickprof estimate --samples 800 --hits 12 --period 10ms --confidence 99%`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEstimate(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.resolution, "resolution", "", "clock resolution `DUR` (tick length), e.g. 16.666ms, 40us, 4ms")
	fl.StringVar(&f.calls, "calls", "", "number `N` of executions timed, e.g. 2000")
	fl.StringVar(&f.ticks, "ticks", "", "total clock ticks `M` crossed inside those executions, e.g. 400")
	fl.StringVar(&f.ticksSq, "ticks-sq", "", "sum `S` of the squared per-execution tick counts, e.g. 400 (optional)")
	fl.StringVar(&f.batches, "batches", "", "`FILE` of \"calls ticks\" lines, one per polling period, # comments, e.g. batches.txt")
	fl.BoolVar(&f.contiguous, "contiguous", false, "the executions ran back to back in a tight loop (Beilner 10c), e.g. a loop cycle")
	fl.StringVar(&f.samples, "samples", "", "total PC samples `N` taken, e.g. 800")
	fl.StringVar(&f.hits, "hits", "", "samples `H` that fell in the function, e.g. 12")
	fl.StringVar(&f.period, "period", "", "sampling period `DUR`: time = share x samples x period, e.g. 10ms")
	fl.StringVar(&f.elapsed, "elapsed", "", "sampled time `DUR`: time = share x elapsed, e.g. 8s")
	fl.StringVar(&f.confidence, "confidence", "95%", "confidence `LEVEL` of the interval, e.g. 95% or 0.95")
	fl.StringVar(&f.interval, "interval", "", "proportion interval `KIND`: wald, wilson or exact, e.g. wald to reproduce the seeds (default: exact below 30 events, else wilson)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object (keys mean_ns, low_ns, high_ns, confidence, method, calls, ticks, stderr_ns, rel_half_width; or share, share_low, share_high, time_ns, time_low_ns, time_high_ns)")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}

// runEstimate dispatches on the mode the flags select.
func runEstimate(cmd *cobra.Command, f estimateFlags) error {
	fl := cmd.Flags()
	var timeSet, shareSet []string
	for _, n := range estimateTimeFlags {
		if fl.Changed(n) {
			timeSet = append(timeSet, "--"+n)
		}
	}
	for _, n := range estimateShareFlags {
		if fl.Changed(n) {
			shareSet = append(shareSet, "--"+n)
		}
	}
	if len(timeSet) > 0 && len(shareSet) > 0 {
		return usagef("%s (clock counts) cannot be combined with %s (sample counts): give one kind", strings.Join(timeSet, ", "), strings.Join(shareSet, ", "))
	}
	if len(timeSet) == 0 && len(shareSet) == 0 {
		return usagef("nothing to estimate: give --resolution with --calls and --ticks (or --batches), or --samples with --hits")
	}
	conf, err := units.ParseConfidence(f.confidence)
	if err != nil {
		return usagef("--confidence: %v", err)
	}
	iv, err := estimate.ParseInterval(f.interval)
	if err != nil {
		return usagef("--interval: %v", err)
	}
	o := estimate.Options{Confidence: conf, Interval: iv}
	w := cmd.OutOrStdout()
	if len(shareSet) > 0 {
		out, err := estimateShare(cmd, f, o)
		return writeEstimate(w, f.asJSON, out, err, func() error { return export.WriteShareEstimate(w, out) })
	}
	out, err := estimateTime(cmd, f, o)
	return writeEstimate(w, f.asJSON, out, err, func() error { return export.WriteTimeEstimate(w, out) })
}

// writeEstimate prints an estimate (unless err) as JSON or with text.
func writeEstimate(w io.Writer, asJSON bool, v any, err error, text func() error) error {
	if err != nil {
		return err
	}
	if asJSON {
		return export.WriteJSON(w, v)
	}
	return text()
}

// countFlag parses a non-negative integer flag value.
func countFlag(flag, v string) (uint64, error) {
	n, err := units.ParseCount(strings.TrimSpace(v))
	if err != nil {
		return 0, usagef("--%s: %v, e.g. --%s 2000", flag, err, flag)
	}
	return n, nil
}

// estimateTime handles clock counts.
func estimateTime(cmd *cobra.Command, f estimateFlags, o estimate.Options) (export.TimeEstimate, error) {
	var out export.TimeEstimate
	fl := cmd.Flags()
	if !fl.Changed("resolution") {
		return out, usagef("clock counts need --resolution: the clock's tick length, e.g. --resolution 4ms")
	}
	res, err := positiveDuration("--resolution", f.resolution)
	if err != nil {
		return out, err
	}
	c := estimate.Counts{Resolution: res, Contiguous: f.contiguous}
	switch {
	case fl.Changed("batches"):
		if fl.Changed("calls") || fl.Changed("ticks") {
			return out, usagef("give --batches or --calls/--ticks, not both: the batches hold the totals")
		}
		bs, err := units.ReadBatchesFile(f.batches)
		if err != nil {
			return out, usagef("--batches: %v (expected one \"calls ticks\" pair per line)", err)
		}
		c.Batches = bs
	case fl.Changed("calls") && fl.Changed("ticks"):
		if c.Calls, err = countFlag("calls", f.calls); err != nil {
			return out, err
		}
		if c.Ticks, err = countFlag("ticks", f.ticks); err != nil {
			return out, err
		}
	case fl.Changed("calls"):
		return out, usagef("--calls needs --ticks: the total ticks crossed inside those calls, e.g. --ticks 400")
	case fl.Changed("ticks"):
		return out, usagef("--ticks needs --calls: the number of executions timed, e.g. --calls 2000")
	default:
		return out, usagef("clock counts need --calls and --ticks, or --batches FILE")
	}
	if fl.Changed("ticks-sq") {
		if c.TicksSq, err = countFlag("ticks-sq", f.ticksSq); err != nil {
			return out, err
		}
		c.HasTicksSq = true
	}
	r, err := estimate.Time(c, o)
	if err != nil {
		return out, estimateErr(err)
	}
	out = export.NewTimeEstimate(r, res)
	return out, nil
}

// estimateShare handles sample counts.
func estimateShare(cmd *cobra.Command, f estimateFlags, o estimate.Options) (export.SampleShare, error) {
	var out export.SampleShare
	fl := cmd.Flags()
	if !fl.Changed("samples") || !fl.Changed("hits") {
		return out, usagef("sample counts need both --samples (all samples, e.g. 800) and --hits (those in the function, e.g. 12)")
	}
	if fl.Changed("period") && fl.Changed("elapsed") {
		return out, usagef("give --period or --elapsed, not both: the sampled time follows from one of them")
	}
	n, err := countFlag("samples", f.samples)
	if err != nil {
		return out, err
	}
	h, err := countFlag("hits", f.hits)
	if err != nil {
		return out, err
	}
	p, err := estimate.Share(h, n, o)
	if err != nil {
		return out, estimateErr(err)
	}
	out = export.SampleShare{Share: p.Share, ShareLow: p.Low, ShareHigh: p.High,
		Confidence: p.Confidence, Method: p.Method, Hits: h, Samples: n}
	var total float64
	switch {
	case fl.Changed("period"):
		period, err := positiveDuration("--period", f.period)
		if err != nil {
			return out, err
		}
		total = float64(n) * period
	case fl.Changed("elapsed"):
		if total, err = positiveDuration("--elapsed", f.elapsed); err != nil {
			return out, err
		}
	default:
		return out, nil
	}
	m, lo, hi := p.Scale(total)
	out.TimeNs, out.TimeLowNs, out.TimeHighNs, out.TotalNs = &m, &lo, &hi, &total
	return out, nil
}
