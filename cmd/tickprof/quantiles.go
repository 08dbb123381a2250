package main

import (
	"slices"
	"strings"

	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/timing"
	"github.com/tickprof/tickprof/units"
)

// parseQuantile parses one quantile in percent ("99.9", "p99") into a
// level, a usage error if it is not one.
func parseQuantile(s string) (float64, error) {
	p, err := units.ParseQuantile(s)
	if err != nil {
		return 0, usageError{err}
	}
	return p, nil
}

// quantileConfig sets the run's quantiles from --quantiles and
// --precision-of: the default levels with the exact clock (or --validate,
// which reads it too), none otherwise; explicit quantiles need the exact
// clock.
func quantileConfig(cfg *timing.Config, quantiles string, changed bool, precisionOf string) error {
	exact := cfg.Clock.Kind == loader.ClockNS || cfg.Exact
	levels := timing.DefaultQuantiles
	if changed {
		var err error
		if levels, err = units.ParseQuantiles(quantiles); err != nil {
			return usagef("--quantiles: %v", err)
		}
		if len(levels) > 0 && !exact {
			return usagef("--quantiles needs the exact clock: add --clock ns (or --validate)")
		}
	}
	if exact {
		cfg.Quantiles = levels
	}
	po := strings.TrimSpace(precisionOf)
	if po == "" || po == "mean" {
		return nil
	}
	p, err := units.ParseQuantile(po)
	if err := firstErr(
		usageIf(cfg.Precision == 0, "--precision-of %s needs --precision, e.g. --precision 5%%", po),
		usageIf(!exact, "--precision-of %s needs the exact clock: add --clock ns", po),
		usageIf(err != nil, "--precision-of: %v", err),
	); err != nil {
		return err
	}
	cfg.PrecisionQuantile = p
	if !slices.Contains(cfg.Quantiles, p) {
		cfg.Quantiles = append(slices.Clone(cfg.Quantiles), p)
	}
	return nil
}
