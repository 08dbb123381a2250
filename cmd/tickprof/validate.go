// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/internal/units"
)

// This file holds the checks every command shares: how unknown commands,
// unknown help topics and shells, and positional arguments where none are
// taken are refused (exit status 2, one line saying what is expected), and
// the early check of output paths.

// checkOutput checks, before any measuring, that an output path given
// with flag can be written (safefile.CheckCreate): a run of minutes must
// not end in "no such directory" or a refused link.
func checkOutput(flag, path string) error {
	if path == "" {
		return nil
	}
	if err := safefile.CheckCreate(path); err != nil {
		return cli.Usagef("%s %s: %v; give a writable path for a new or own regular file", flag, path, err)
	}
	return nil
}

// positiveDuration parses a duration flag and requires it to be above zero.
func positiveDuration(flag, v string) (float64, error) {
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, cli.Usagef("%s: %v", flag, err)
	}
	if !(d > 0) {
		return 0, cli.Usagef("%s %q must be above zero, e.g. %s 1ms", flag, v, flag)
	}
	return d, nil
}

// estimateErr turns an estimate input error into a usage error (exit 2).
func estimateErr(err error) error {
	if errors.Is(err, estimate.ErrInvalid) {
		return cli.UsageError{Err: err}
	}
	return err
}

// countFlag parses a non-negative integer flag value.
func countFlag(flag, v string) (uint64, error) {
	n, err := units.ParseCount(strings.TrimSpace(v))
	if err != nil {
		return 0, cli.Usagef("--%s: %v, e.g. --%s 2000", flag, err, flag)
	}
	return n, nil
}

// fractionFlag parses a percentage flag ("5%" or 0.05) that must lie
// strictly between 0 and 1; want says what is expected ("a relative
// half-width such as 5%"). An empty value is 0.
func fractionFlag(flag, v, want string) (float64, error) {
	if v == "" {
		return 0, nil
	}
	p, err := units.ParsePercent(v)
	if err != nil || !(p > 0 && p < 1) {
		return 0, cli.Usagef("%s %q: want %s", flag, v, want)
	}
	return p, nil
}

// parseConfidence parses --confidence.
func parseConfidence(v string) (float64, error) {
	c, err := units.ParseConfidence(v)
	if err != nil {
		return 0, cli.Usagef("--confidence: %v", err)
	}
	return c, nil
}

// outputFlags are the flags of every command that prints intervals:
// --confidence and --json.
type outputFlags struct {
	confidence string
	json       bool
}

// add declares the flags on cmd; conf and json are their help texts.
func (o *outputFlags) add(cmd *cobra.Command, conf, json string) {
	fl := cmd.Flags()
	fl.StringVar(&o.confidence, "confidence", "95%", conf)
	fl.BoolVar(&o.json, "json", false, json)
}
