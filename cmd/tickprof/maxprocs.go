// SPDX-License-Identifier: Apache-2.0

//go:build fleet

package main

import (
	"os"
	"runtime"
)

// fixAgentProcs keeps GOMAXPROCS at the value the runtime chose at start
// (from the CPUs, the affinity mask and the cgroup's CPU quota), unless
// the GOMAXPROCS variable set it already: otherwise the runtime reads the
// cgroup's quota again every second (sysmon's GOMAXPROCS update, which
// opens and reads cgroup files), 7% of a long-running agent's own CPU
// with 20 processes watched. A quota changed during the run is then not
// followed.
func fixAgentProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
}
