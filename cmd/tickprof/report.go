// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
)

func newReportCmd() *cobra.Command {
	var (
		top   int
		byCum bool
		o     outputFlags
	)
	cmd := command("report", "report FILE", "The table with intervals for a pprof CPU profile or a tickprof time profile", func(cmd *cobra.Command, args []string) error {
		conf, confErr := parseConfidence(o.confidence)
		if err := cli.FirstErr(confErr, cli.UsageIf(top < 0, "--top %d: give a count, or 0 for all", top)); err != nil {
			return err
		}
		p, err := export.ReadProfileFile(args[0])
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if export.IsTimeProfile(p) {
			t, err := export.TimeReport(p)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return export.Write(w, o.json, t, func(w io.Writer, t *export.TimeTable) error { return t.WriteText(w, top) })
		}
		if export.IsOffCPUProfile(p) {
			t, err := export.OffCPUReport(p, export.OffCPUTableType(p), estimate.Options{Confidence: conf})
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return export.WriteOffCPUTable(w, t, top, o.json)
		}
		t, err := export.CPUReport(p, estimate.Options{Confidence: conf})
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		if byCum {
			t.SortByCum()
		}
		return export.WriteCPUTable(w, t, top, o.json)
	})
	cmd.Args = cli.ExactArgs(1, "one profile FILE")
	fl := cmd.Flags()
	fl.IntVar(&top, "top", 20, "show the top `N` functions (0 for all)")
	o.add(cmd, "confidence level of the share intervals (a time profile keeps its own)", "print JSON")
	fl.BoolVar(&byCum, "cum", false, "order by cumulative share")
	return cmd
}
