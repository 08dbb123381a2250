// SPDX-License-Identifier: Apache-2.0

//go:build !fleet

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/internal/safefile"
)

// fleetBinary is the fleet build's file name, looked for beside this
// executable (fleet.go).
const fleetBinary = "tickprof-fleet"

// newAgentCmd is `tickprof agent` in the lean build: the command line,
// --help included, goes whole to the fleet build.
func newAgentCmd() *cobra.Command {
	cmd := command("agent", agentUse, agentShort, func(*cobra.Command, []string) error { return execFleet() })
	cmd.Args = cobra.ArbitraryArgs
	cmd.DisableFlagParsing = true
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintln(c.ErrOrStderr(), "tickprof:", execFleet())
		os.Exit(1)
	})
	return cmd
}

// execFleet runs the fleet build (fleetBinary, in the directory of this
// executable) in this process's place, with this process's arguments and
// environment: the same PID, so signals and service managers see no
// change. The file is opened, checked and run through its descriptor
// (safefile.OpenTrusted: tickprof runs as root, and a file another user
// could have written or put there is not run). It returns only when the
// fleet build cannot be run.
func execFleet() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this executable to run %s beside it: %w", fleetBinary, err)
	}
	path := filepath.Join(filepath.Dir(self), fleetBinary)
	f, err := safefile.OpenTrusted(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("this tickprof (%s) leaves the agent and the reads from Pyroscope to %s, and there is none beside it (make build makes both; go build -tags fleet makes one tickprof that holds every command)", self, path)
	}
	if err != nil {
		return fmt.Errorf("%s not run: %w", fleetBinary, err)
	}
	defer f.Close()
	err = syscall.Exec(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.Args, os.Environ())
	return fmt.Errorf("run %s: %w", path, err)
}
