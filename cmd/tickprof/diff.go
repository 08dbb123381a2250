// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
)

func newDiffCmd() *cobra.Command {
	var (
		all bool
		o   outputFlags
	)
	cmd := command("diff", "diff BASE NEW", "What changed between two profiles, with intervals; significant changes only by default", func(cmd *cobra.Command, args []string) error {
		conf, err := parseConfidence(o.confidence)
		if err != nil {
			return err
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
		return export.Write(cmd.OutOrStdout(), o.json, t, func(w io.Writer, t *export.DiffTable) error { return t.WriteText(w) })
	})
	cmd.Args = cli.ExactArgs(2, "two profiles, BASE and NEW")
	cmd.Flags().BoolVar(&all, "all", false, "show every change, significant or not")
	o.add(cmd, "confidence level of the share differences (time profiles keep their own)", "print JSON")
	return cmd
}
