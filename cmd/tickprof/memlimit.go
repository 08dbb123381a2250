package main

import (
	"os"
	"runtime/debug"
)

// agentMemoryLimit is the Go heap's soft limit for a long-running agent
// unless GOMEMLIMIT says otherwise. Left to GOGC alone, the heap doubles
// past its live size (22 MB with 20 watched processes, 40 MB at the first window) at each window's
// symbolization, and the agent's RSS would sit near its 100 MB budget.
const agentMemoryLimit = 48 << 20

// limitAgentMemory sets agentMemoryLimit unless the user set GOMEMLIMIT.
func limitAgentMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(agentMemoryLimit)
	}
}
