// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/features"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := command("doctor", "doctor", "What this kernel and these privileges allow, and how each target kind is timed", func(cmd *cobra.Command, _ []string) error {
		f, err := features.ProbeFeatures()
		if err != nil {
			return fmt.Errorf("probe kernel features: %w", err)
		}
		return export.Write(cmd.OutOrStdout(), asJSON, table.NewDoctorReport(f), table.WriteDoctor)
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
