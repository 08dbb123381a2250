// SPDX-License-Identifier: Apache-2.0

package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
)

func TestExitCodeAndFirstErr(t *testing.T) {
	io := errors.New("read failed")
	for _, c := range []struct {
		err  error
		want int
	}{
		{Usagef("--x %d: want 1", 0), 2},
		{fmt.Errorf("time: %w", Usagef("wrapped")), 2},
		{io, 1},
		{FirstErr(nil, UsageIf(false, "no"), UsageIf(true, "first"), Usagef("second")), 2},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if err := FirstErr(nil, UsageIf(true, "first"), io); err == nil || err.Error() != "first" {
		t.Errorf("FirstErr kept %v, want the first failing check", err)
	}
	if err := FirstErr(nil, UsageIf(false, "x")); err != nil {
		t.Errorf("FirstErr of passing checks = %v", err)
	}
}

func TestHardenRefusesUnknownInput(t *testing.T) {
	root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(&cobra.Command{Use: "run", Args: NoArgs, RunE: func(*cobra.Command, []string) error { return nil }})
	Harden(root)
	for _, args := range [][]string{{"run", "stray"}, {"help", "nosuch"}, {"run", "--nosuch"}, {"completion", "tcsh"}} {
		root.SetArgs(args)
		if err := root.Execute(); ExitCode(err) != 2 {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
	root.SetArgs([]string{"run"})
	if err := root.Execute(); err != nil {
		t.Errorf("run: %v", err)
	}
}
