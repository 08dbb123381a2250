package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/units"
)

func newReportCmd() *cobra.Command {
	var (
		top        int
		confidence string
		asJSON     bool
		byCum      bool
	)
	cmd := &cobra.Command{
		Use:     "report FILE",
		Short:   "The table with intervals for a pprof CPU profile or a tickprof time profile",
		Long:    help("report"),
		Example: help("report.example"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("report takes one profile FILE, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := units.ParseConfidence(confidence)
			if err != nil {
				return usagef("--confidence: %v", err)
			}
			if top < 0 {
				return usagef("--top %d: give a count, or 0 for all", top)
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
				if asJSON {
					return export.WriteJSON(w, t)
				}
				return t.WriteText(w, top)
			}
			t, err := export.CPUReport(p, estimate.Options{Confidence: conf})
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if byCum {
				t.SortByCum()
			}
			return export.WriteCPUTable(w, t, top, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&top, "top", 20, "show the top `N` functions (0 for all)")
	fl.StringVar(&confidence, "confidence", "95%", "confidence level of the share intervals (a time profile keeps its own)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	fl.BoolVar(&byCum, "cum", false, "order by cumulative share")
	return cmd
}
