// SPDX-License-Identifier: Apache-2.0

package timing_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/timing"
)

// Time the C library's malloc in a command started under the probes, until
// its mean time per call is known within 5% (or 10 s have passed, or the
// command exits), and print the mean with its interval.
func Example() {
	s, err := timing.Open(context.Background(), timing.Config{
		Command:   []string{"ls", "-lR", "/usr/share"},
		Stdout:    io.Discard,
		Targets:   timing.Targets{Users: []string{"libc.so.6:malloc"}},
		Precision: 0.05,
		Duration:  10 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	res, err := s.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range res.Targets {
		if t.Err != "" {
			fmt.Printf("%s: %s\n", t.Name, t.Err)
			continue
		}
		fmt.Printf("%s: %d calls, %.0f ns a call [%.0f, %.0f] at %g%% confidence (clock %s; %s)\n",
			t.Name, t.Calls, t.Estimate.Mean, t.Estimate.Low, t.Estimate.High,
			100*res.Confidence, res.Clock, res.StopReason)
	}
}

// TestExample runs Example, which needs root and BPF.
func TestExample(t *testing.T) {
	bpftest.Require(t)
	Example()
}
