// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"runtime/debug"
)

// agentMemoryLimit is the Go heap's soft limit for a long-running agent
// unless GOMEMLIMIT says otherwise. Left to GOGC alone, the heap grows to
// twice its live size (22 MB with 20 watched processes, 40 MB at the first
// window's symbolization), and the agent's RSS sat at 90-100 MB, at its
// budget.
const agentMemoryLimit = 48 << 20

// limitAgentMemory sets agentMemoryLimit unless the user set GOMEMLIMIT.
func limitAgentMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(agentMemoryLimit)
	}
}
