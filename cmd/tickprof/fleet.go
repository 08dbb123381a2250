// SPDX-License-Identifier: Apache-2.0

package main

// tickprof is built twice from this package (make build):
//
//   - bin/tickprof, the default build, holds every command but the fleet's
//     (`agent`, `report --pyroscope`, `diff --pyroscope`), which it hands,
//     by exec, to the fleet build beside it (fleet_lean.go). Without the
//     Pyroscope, OpenTelemetry, gRPC and Prometheus libraries it is 18 MB
//     instead of 40, and what a run maps of it at start (the package
//     initializations of every library linked in) is 9 MB less resident
//     in each `sample` and `time` run and in `time`'s detach helper
//     (docs/architecture.md, "Two builds").
//   - bin/tickprof-fleet (`go build -tags fleet`) holds every command,
//     the fleet's in-process.

// The agent command's synopsis, the same in both builds.
const (
	agentUse   = "agent (-p PID... | --exe NAME|PATH... | --all) [--pyroscope URL] [--otlp HOST:PORT] [--dir DIR]"
	agentShort = "Sample continuously and push each window to Pyroscope, OTLP or a directory"
)
