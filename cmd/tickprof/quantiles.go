package main

import (
	"math"
	"strconv"
	"strings"

	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/timing"
)

// parseQuantiles parses a --quantiles list: "50,90,99,99.9" (percent, a
// leading p allowed) into levels in (0, 1); "none" gives nil.
func parseQuantiles(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := parseQuantile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// parseQuantile parses one quantile in percent ("99.9", "p99") into a level.
func parseQuantile(s string) (float64, error) {
	f := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "p")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || !(v > 0 && v < 100) {
		return 0, usagef("quantile %q: want a percentage between 0 and 100, such as 99 or 99.9", s)
	}
	return math.Round(v*1e10) / 1e12, nil
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
		if levels, err = parseQuantiles(quantiles); err != nil {
			return usagef("--quantiles: %v", err)
		}
		if len(levels) > 0 && !exact {
			return usagef("--quantiles needs the exact clock: add --clock ns (or --validate)")
		}
	}
	if exact {
		cfg.Quantiles = levels
	}
	switch po := strings.TrimSpace(precisionOf); po {
	case "", "mean":
	default:
		if cfg.Precision == 0 {
			return usagef("--precision-of %s needs --precision, e.g. --precision 5%%", po)
		}
		if !exact {
			return usagef("--precision-of %s needs the exact clock: add --clock ns", po)
		}
		p, err := parseQuantile(po)
		if err != nil {
			return usagef("--precision-of: %v", err)
		}
		cfg.PrecisionQuantile = p
		found := false
		for _, l := range cfg.Quantiles {
			found = found || l == p
		}
		if !found {
			cfg.Quantiles = append(append([]float64(nil), cfg.Quantiles...), p)
		}
	}
	return nil
}
