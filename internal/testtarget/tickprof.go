// SPDX-License-Identifier: Apache-2.0

package testtarget

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildTickprof builds tickprof's two builds into dir, as make build does:
// dir/tickprof (the default build) and dir/tickprof-fleet (-tags fleet),
// to which the first hands the agent and the Pyroscope reads. It returns
// the path of dir/tickprof. For a TestMain: errors are returned, not
// reported.
func BuildTickprof(dir string) (string, error) {
	bin := filepath.Join(dir, "tickprof")
	for _, b := range []struct{ out, tags string }{{bin, ""}, {filepath.Join(dir, "tickprof-fleet"), "fleet"}} {
		build := exec.Command(GoTool(), "build", "-tags", b.tags, "-o", b.out, "github.com/tickprof/tickprof/cmd/tickprof")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return "", fmt.Errorf("build %s: %w", b.out, err)
		}
	}
	return bin, nil
}
