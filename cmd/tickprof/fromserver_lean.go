// SPDX-License-Identifier: Apache-2.0

//go:build !fleet

package main

import (
	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"
)

// reportFromServer hands `report --pyroscope` to the fleet build
// (fleet_lean.go): it returns only when that cannot be run.
func reportFromServer(*cobra.Command, *serverFlags, string, string) (*profile.Profile, string, error) {
	return nil, "", execFleet()
}

// fetchBoth hands `diff --pyroscope` to the fleet build (fleet_lean.go):
// it returns only when that cannot be run.
func (d *diffServer) fetchBoth() (*profile.Profile, *profile.Profile, error) {
	return nil, nil, execFleet()
}
