// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/timing"
)

func TestQuantileFlags(t *testing.T) {
	ns := timing.Clock{Kind: timing.ClockNS}
	jiffies := timing.Clock{Kind: timing.ClockJiffies}
	cases := []struct {
		clock       timing.Clock
		precision   float64
		q           string
		changed     bool
		precisionOf string
		want        []float64
		wantOf      float64
		err         string
	}{
		{clock: ns, want: timing.DefaultQuantiles},
		{clock: jiffies, want: nil},
		{clock: ns, q: "50, p99.9", changed: true, want: []float64{0.5, 0.999}},
		{clock: ns, q: "none", changed: true, want: nil},
		{clock: jiffies, q: "99", changed: true, err: "--quantiles needs the exact clock"},
		{clock: ns, q: "100", changed: true, err: "between 0 and 100"},
		{clock: ns, q: "abc", changed: true, err: "between 0 and 100"},
		{clock: ns, precision: 0.05, precisionOf: "p95", want: append(append([]float64(nil), timing.DefaultQuantiles...), 0.95), wantOf: 0.95},
		{clock: ns, precision: 0.05, precisionOf: "99", want: timing.DefaultQuantiles, wantOf: 0.99},
		{clock: ns, precisionOf: "p99", err: "needs --precision"},
		{clock: jiffies, precision: 0.05, precisionOf: "p99", err: "needs the exact clock"},
	}
	for _, c := range cases {
		cfg := timing.Config{Clock: c.clock, Precision: c.precision}
		err := quantileConfig(&cfg, c.q, c.changed, c.precisionOf)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || cli.ExitCode(err) != 2 {
				t.Errorf("%+v: error %v, want a usage error with %q", c, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", c, err)
			continue
		}
		if len(cfg.Quantiles) != len(c.want) || cfg.PrecisionQuantile != c.wantOf {
			t.Errorf("%+v: quantiles %v of %v, want %v of %v", c, cfg.Quantiles, cfg.PrecisionQuantile, c.want, c.wantOf)
			continue
		}
		for i := range c.want {
			if cfg.Quantiles[i] != c.want[i] {
				t.Errorf("%+v: quantiles %v, want %v", c, cfg.Quantiles, c.want)
			}
		}
	}
}

func TestPlanQuantile(t *testing.T) {
	out, _, err := runCommandInProcess(t, newPlanCmd(), "--quantile", "99", "--precision", "5%", "--rate", "1000/s", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Quantile float64 `json:"quantile"`
		Plans    []struct {
			Calls     uint64   `json:"calls"`
			MinCalls  uint64   `json:"min_calls"`
			RunTimeNs *float64 `json:"run_time_ns"`
		} `json:"plans"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Lognormal shape 1, p99 within ±5%: tens of thousands of calls
	// (estimate's TestPlanQuantile checks the number by simulation).
	if p.Quantile != 0.99 || len(p.Plans) != 1 || p.Plans[0].Calls < 20000 || p.Plans[0].Calls > 200000 ||
		p.Plans[0].MinCalls != 299 || p.Plans[0].RunTimeNs == nil || math.Abs(*p.Plans[0].RunTimeNs/(float64(p.Plans[0].Calls)*1e6)-1) > 1e-9 {
		t.Errorf("plan --quantile 99 --precision 5%%: %s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--quantile", "99"}, "--quantile needs --precision"},
		{[]string{"--quantile", "99", "--precision", "5%", "--expect", "1ms"}, "--expect does not go with --quantile"},
		{[]string{"--quantile", "120", "--precision", "5%"}, "between 0 and 100"},
		{[]string{"--shape", "2", "--resolution", "1ms", "--expect", "1ms", "--precision", "5%"}, "--shape goes with --quantile"},
	} {
		_, _, err := runCommandInProcess(t, newPlanCmd(), c.args...)
		checkUsageError(t, c.args, err, c.want)
	}
	// A precision the buckets cannot give is said plainly.
	out, _, err = runCommandInProcess(t, newPlanCmd(), "--quantile", "50", "--precision", "1%")
	if err != nil || !strings.Contains(out, "no plan: precision ±1% is not above what the histogram's buckets alone take") {
		t.Errorf("±1%%: %v %q", err, out)
	}
}
