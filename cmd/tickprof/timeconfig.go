// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/timing"
)

// parseTimeFlags validates the flags of `tickprof time` into a timing
// configuration.
func parseTimeFlags(f timeFlags, argv []string) (timing.Config, error) {
	cfg := timing.Config{PID: f.pid, Command: argv, Exact: f.validate, Interval: f.interval, Duration: f.duration, Window: f.window, StackBytes: cmp.Or(f.userStack, -1),
		// Only the profile and the JSON show caller stacks.
		SkipCallers: f.jsonOut == "" && f.pprofOut == "",
		Targets:     timing.Targets{Users: f.users, Syscalls: f.syscalls, Kernel: f.kfuncs, MaxProbes: f.maxProbes}}
	conf, confErr := parseConfidence(f.confidence)
	if err := cli.FirstErr(
		cli.UsageIf(len(f.users)+len(f.syscalls)+len(f.kfuncs) == 0, "no target: give at least one -u SYMBOL, -s SYSCALL or -k FUNC"),
		cli.UsageIf(f.pid != 0 && len(argv) > 0, "give either -p PID or -- CMD, not both"),
		cli.UsageIf(f.pid < 0, "-p %d: a process ID is positive", f.pid),
		cli.UsageIf(f.maxProbes < 1, "--max-probes %d: want at least 1", f.maxProbes),
		cli.UsageIf(f.userStack < 0 || f.userStack > symbolize.MaxStackBytes, "--user-stack %d: give 0 (frame pointers only) up to %d bytes", f.userStack, symbolize.MaxStackBytes),
		cli.UsageIf(f.interval < 10*time.Millisecond || f.interval > time.Hour, "--interval %s: want 10ms to 1h", f.interval),
		attachMode(f.attach, &cfg.Targets),
		checkOutput("--json", f.jsonOut),
		checkOutput("-o", f.pprofOut),
		cli.UsageIf(f.duration < 0, "--duration %s: want a positive duration", f.duration),
		confErr,
	); err != nil {
		return cfg, err
	}
	cfg.Estimate = estimate.Options{Confidence: conf}
	var err error
	if cfg.Precision, err = fractionFlag("--precision", f.precision, "a relative half-width such as 5%"); err != nil {
		return cfg, err
	}
	if cfg.Overhead, err = fractionFlag("--overhead", f.overhead, "a slowdown budget such as 1%"); err != nil {
		return cfg, err
	}
	if err := cli.FirstErr(
		cli.UsageIf(f.overhead != "" && f.noCorrect, "--overhead needs the calibrated probe cost: drop --no-correct"),
		cli.UsageIf(f.window < 0, "--window %s: want a positive duration", f.window),
		timeClock(f, &cfg),
	); err != nil {
		return cfg, err
	}
	return cfg, quantileConfig(&cfg, f.quantiles, f.quantilesSet, f.precisionOf)
}

// attachMode checks --attach and sets how kernel functions are probed.
func attachMode(mode string, t *timing.Targets) error {
	if mode == "" && len(t.Kernel) == 0 {
		return nil
	}
	m, err := timing.ParseAttachMode(mode)
	if len(t.Kernel) > 0 {
		t.KernelAttach = m
	}
	return cli.UsageIf(err != nil, "--attach: %v", err)
}

// timeClock reads --clock (default: Config.DefaultClock) and checks that
// --validate has a tick clock to check.
func timeClock(f timeFlags, cfg *timing.Config) error {
	cfg.Clock = cfg.DefaultClock()
	if f.clock != "" {
		var err error
		if cfg.Clock, err = timing.ParseClock(f.clock); err != nil {
			return cli.Usagef("--clock: %v", err)
		}
	}
	return cli.UsageIf(f.validate && cfg.Clock.Kind == timing.ClockNS, "--validate checks a tick clock against ns: give --clock jiffies or tick:DUR")
}

// parseQuantile parses one quantile in percent ("99.9", "p99") into a
// level, a usage error if it is not one.
func parseQuantile(s string) (float64, error) {
	p, err := units.ParseQuantile(s)
	if err != nil {
		return 0, cli.UsageError{Err: err}
	}
	return p, nil
}

// quantileConfig sets the run's quantiles from --quantiles and
// --precision-of: the default levels with the exact clock (or --validate,
// which reads it too), none otherwise; explicit quantiles need the exact
// clock.
func quantileConfig(cfg *timing.Config, quantiles string, changed bool, precisionOf string) error {
	exact := cfg.Clock.Kind == timing.ClockNS || cfg.Exact
	levels := timing.DefaultQuantiles
	if changed {
		var err error
		if levels, err = units.ParseQuantiles(quantiles); err != nil {
			return cli.Usagef("--quantiles: %v", err)
		}
		if len(levels) > 0 && !exact {
			return cli.Usagef("--quantiles needs the exact clock: add --clock ns (or --validate)")
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
	if err := cli.FirstErr(
		cli.UsageIf(cfg.Precision == 0, "--precision-of %s needs --precision, e.g. --precision 5%%", po),
		cli.UsageIf(!exact, "--precision-of %s needs the exact clock: add --clock ns", po),
		cli.UsageIf(err != nil, "--precision-of: %v", err),
	); err != nil {
		return err
	}
	cfg.PrecisionQuantile = p
	if !slices.Contains(cfg.Quantiles, p) {
		cfg.Quantiles = append(slices.Clone(cfg.Quantiles), p)
	}
	return nil
}
