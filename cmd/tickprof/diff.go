package main

import (
	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/units"
)

func newDiffCmd() *cobra.Command {
	var (
		all        bool
		confidence string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:     "diff BASE NEW",
		Short:   "What changed between two profiles, with intervals; significant changes only by default",
		Long:    help("diff"),
		Example: help("diff.example"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("diff takes two profiles, BASE and NEW, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := units.ParseConfidence(confidence)
			if err != nil {
				return usagef("--confidence: %v", err)
			}
			base, err := export.ReadProfileFile(args[0])
			if err != nil {
				return err
			}
			newp, err := export.ReadProfileFile(args[1])
			if err != nil {
				return err
			}
			t, err := export.Diff(base, newp, estimate.Options{Confidence: conf}, all)
			if err != nil {
				return err
			}
			if asJSON {
				return export.WriteJSON(cmd.OutOrStdout(), t)
			}
			return t.WriteText(cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "show every change, significant or not")
	fl.StringVar(&confidence, "confidence", "95%", "confidence level of the share differences (time profiles keep their own)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
