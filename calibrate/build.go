// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	_ "embed" // for the calibration target's source
	"fmt"

	"github.com/tickprof/tickprof/internal/cbuild"
)

// targetSource is c/target.c, the calibration target.
//
//go:embed c/target.c
var targetSource []byte

// targetFlags are the calibration target's compiler flags.
var targetFlags = []string{"-O2", "-fno-omit-frame-pointer"}

// BuildTarget compiles the calibration target with the machine's gcc into
// dir and returns its path.
func BuildTarget(dir string) (string, error) {
	exe, err := cbuild.BuildSource(dir, "tickprof-calib", targetSource, targetFlags, nil)
	if err != nil {
		return "", fmt.Errorf("build the calibration target: %w", err)
	}
	return exe, nil
}
