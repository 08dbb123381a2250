// SPDX-License-Identifier: Apache-2.0

// Command tickprof is an eBPF profiler that reports every time with a
// confidence interval. See README.md for a tour and docs/usage.md for every
// command.
//
// It holds flags, validation and wiring only: each command fills a library
// configuration (timing.Config, sampler.Config, ...), runs it, and hands
// the result to export. The commands' long help and examples are text
// files under help/ (see help.go). It is built twice, the default build
// handing the agent and the Pyroscope reads to the fleet build beside it
// (fleet.go).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/internal/termsafe"
	"github.com/tickprof/tickprof/timing"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "tickprof",
		Short:         "eBPF profiler whose every time comes with a confidence interval",
		Long:          help("root"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		// Each command adds itself here: newPlanCmd(), newEstimateCmd(), ...
		newDoctorCmd(),
		newSampleCmd(),
		newReportCmd(),
		newDiffCmd(),
		newTimeCmd(),
		newCalibrateCmd(), newDemoCmd(),
		newPlanCmd(), newEstimateCmd(),
		newAgentCmd(),
	)
	cli.Harden(root)
	// Names from targets and files reach the terminal escaped (termsafe);
	// the files written keep them exact.
	root.SetOut(termsafe.NewWriter(os.Stdout))
	root.SetErr(termsafe.NewWriter(os.Stderr))
	return root
}

func main() {
	if timing.IsDetachHelper() {
		runDetachHelper()
	}
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tickprof:", termsafe.String(err.Error()))
		os.Exit(cli.ExitCode(err))
	}
}

// runDetachHelper is the process a timing session hands its probes to
// (timing.Config.DetachHelper).
func runDetachHelper() {
	if err := timing.RunDetachHelper(); err != nil {
		fmt.Fprintln(os.Stderr, "tickprof: detach helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
