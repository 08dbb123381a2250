// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/units"
)

// estimateFlags are the raw values of the estimate command's flags.
type estimateFlags struct {
	resolution, calls, ticks, ticksSq, batches string
	contiguous                                 bool
	samples, hits, period, elapsed, interval   string
	outputFlags
}

// The flags of each mode, to reject mixtures.
var (
	estimateTimeFlags  = []string{"resolution", "calls", "ticks", "ticks-sq", "batches", "contiguous"}
	estimateShareFlags = []string{"samples", "hits", "period", "elapsed"}
)

func newEstimateCmd() *cobra.Command {
	var f estimateFlags
	cmd := command("estimate", "estimate --resolution DUR (--calls N --ticks M [--ticks-sq S] | --batches FILE) | --samples N --hits H [--period DUR | --elapsed DUR]", "Mean time with its confidence interval from tick counts, or a share from samples", func(cmd *cobra.Command, _ []string) error {
		return runEstimate(cmd, f)
	})
	cmd.Args = cli.NoArgs
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
	f.add(cmd, "confidence `LEVEL` of the interval, e.g. 95% or 0.95", "print one JSON object (keys mean_ns, low_ns, high_ns, confidence, method, calls, ticks, stderr_ns, rel_half_width; or share, share_low, share_high, time_ns, time_low_ns, time_high_ns)")
	fl.StringVar(&f.interval, "interval", "", "proportion interval `KIND`: wald, wilson or exact, e.g. wald to reproduce the seeds (default: exact below 30 events, else wilson)")
	cmd.SetFlagErrorFunc(cli.FlagError)
	return cmd
}

// runEstimate dispatches on the mode the flags select.
func runEstimate(cmd *cobra.Command, f estimateFlags) error {
	timeSet, shareSet := cli.ChangedFlags(cmd, estimateTimeFlags), cli.ChangedFlags(cmd, estimateShareFlags)
	conf, confErr := parseConfidence(f.confidence)
	iv, ivErr := estimate.ParseInterval(f.interval)
	if err := cli.FirstErr(
		cli.UsageIf(len(timeSet) > 0 && len(shareSet) > 0, "%s (clock counts) cannot be combined with %s (sample counts): give one kind", strings.Join(timeSet, ", "), strings.Join(shareSet, ", ")),
		cli.UsageIf(len(timeSet) == 0 && len(shareSet) == 0, "nothing to estimate: give --resolution with --calls and --ticks (or --batches), or --samples with --hits"),
		confErr,
		cli.UsageIf(ivErr != nil, "--interval: %v", ivErr),
	); err != nil {
		return err
	}
	o := estimate.Options{Confidence: conf, Interval: iv}
	if len(shareSet) > 0 {
		out, err := estimateShare(cmd, f, o)
		if err != nil {
			return err
		}
		return export.Write(cmd.OutOrStdout(), f.json, out, table.WriteShareEstimate)
	}
	out, err := estimateTime(cmd, f, o)
	if err != nil {
		return err
	}
	return export.Write(cmd.OutOrStdout(), f.json, out, table.WriteTimeEstimate)
}

// estimateTime handles clock counts.
func estimateTime(cmd *cobra.Command, f estimateFlags, o estimate.Options) (table.TimeEstimate, error) {
	fl := cmd.Flags()
	calls, ticks, batches := fl.Changed("calls"), fl.Changed("ticks"), fl.Changed("batches")
	res, resErr := positiveDuration("--resolution", f.resolution)
	if err := cli.FirstErr(
		cli.UsageIf(!fl.Changed("resolution"), "clock counts need --resolution: the clock's tick length, e.g. --resolution 4ms"),
		resErr,
		cli.UsageIf(batches && (calls || ticks), "give --batches or --calls/--ticks, not both: the batches hold the totals"),
		cli.UsageIf(!batches && calls && !ticks, "--calls needs --ticks: the total ticks crossed inside those calls, e.g. --ticks 400"),
		cli.UsageIf(!batches && ticks && !calls, "--ticks needs --calls: the number of executions timed, e.g. --calls 2000"),
		cli.UsageIf(!batches && !calls && !ticks, "clock counts need --calls and --ticks, or --batches FILE"),
	); err != nil {
		return table.TimeEstimate{}, err
	}
	c, err := timeCounts(cmd, f)
	if err != nil {
		return table.TimeEstimate{}, err
	}
	c.Resolution, c.Contiguous = res, f.contiguous
	r, err := estimate.Time(c, o)
	if err != nil {
		return table.TimeEstimate{}, estimateErr(err)
	}
	return table.NewTimeEstimate(r, res), nil
}

// timeCounts reads the counts of --batches or --calls, --ticks and
// --ticks-sq.
func timeCounts(cmd *cobra.Command, f estimateFlags) (c estimate.Counts, err error) {
	if cmd.Flags().Changed("batches") {
		if c.Batches, err = units.ReadBatchesFile(f.batches); err != nil {
			return c, cli.Usagef("--batches: %v (expected one \"calls ticks\" pair per line)", err)
		}
	} else if c.Calls, err = countFlag("calls", f.calls); err != nil {
		return c, err
	} else if c.Ticks, err = countFlag("ticks", f.ticks); err != nil {
		return c, err
	}
	if c.HasTicksSq = cmd.Flags().Changed("ticks-sq"); c.HasTicksSq {
		c.TicksSq, err = countFlag("ticks-sq", f.ticksSq)
	}
	return c, err
}

// estimateShare handles sample counts.
func estimateShare(cmd *cobra.Command, f estimateFlags, o estimate.Options) (table.SampleShare, error) {
	var out table.SampleShare
	fl := cmd.Flags()
	n, nErr := countFlag("samples", f.samples)
	h, hErr := countFlag("hits", f.hits)
	if err := cli.FirstErr(
		cli.UsageIf(!fl.Changed("samples") || !fl.Changed("hits"), "sample counts need both --samples (all samples, e.g. 800) and --hits (those in the function, e.g. 12)"),
		cli.UsageIf(fl.Changed("period") && fl.Changed("elapsed"), "give --period or --elapsed, not both: the sampled time follows from one of them"),
		nErr, hErr,
	); err != nil {
		return out, err
	}
	p, err := estimate.Share(h, n, o)
	if err != nil {
		return out, estimateErr(err)
	}
	out = table.SampleShare{Share: p.Share, ShareLow: p.Low, ShareHigh: p.High,
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
