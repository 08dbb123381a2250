// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"sort"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/sampler"
)

// Sample the stacks of a command (and of the processes it starts) at
// 999 Hz until it exits, and print the share of the samples in its three
// busiest functions, each with its confidence interval.
func Example() {
	s, err := sampler.Open(context.Background(), sampler.Config{
		Frequency: 999,
		Command:   []string{"sh", "-c", "head -c 200000000 /dev/zero | sha256sum"},
		Stdout:    io.Discard,
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
	// Each sample's stack is leaf first; a function without a symbol is
	// named by the file it lies in.
	prof := res.Profile
	leaf := map[string]uint64{}
	var all uint64
	for _, smp := range prof.Samples {
		all += uint64(smp.Count)
		if len(smp.Locations) == 0 {
			continue
		}
		loc := prof.Locations[smp.Locations[0]]
		name := loc.Function
		if name == "" && loc.Mapping >= 0 {
			name = "in " + prof.Mappings[loc.Mapping].File
		}
		leaf[name] += uint64(smp.Count)
	}
	funcs := make([]string, 0, len(leaf))
	for f := range leaf {
		funcs = append(funcs, f)
	}
	sort.Slice(funcs, func(i, j int) bool { return leaf[funcs[i]] > leaf[funcs[j]] })

	fmt.Printf("%d samples in %v\n", all, prof.Duration.Round(time.Millisecond))
	for _, f := range funcs[:min(3, len(funcs))] {
		sh, err := estimate.Share(leaf[f], all, estimate.Options{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%5.1f%% [%.1f%%, %.1f%%] at %g%% confidence  %s\n",
			100*sh.Share, 100*sh.Low, 100*sh.High, 100*sh.Confidence, f)
	}
}

// TestExample runs Example, which needs root and BPF.
func TestExample(t *testing.T) {
	bpftest.Require(t)
	Example()
}
