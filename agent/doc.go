// SPDX-License-Identifier: Apache-2.0

// Package agent runs tickprof continuously: it watches a set of processes
// (PIDs, every process running an executable, or all), samples their stacks
// with the sampler package in consecutive windows, encodes each window of
// each process as a merge-friendly pprof profile (export.EncodeCPUWindow)
// labelled with its service, host, PID, executable, build ID and kernel
// release, and hands it to one push.Pusher per destination. With timing
// targets it also times each watched process with its own timing session
// (timing.go) and pushes one merge-friendly time profile per process and
// window (export.EncodeTimeWindow). It serves Prometheus metrics about
// itself and a health check (metrics.go).
//
// The caller fills a Config (destinations included) and calls Serve, which
// owns the whole run: it checks the configuration (a *ConfigError when it
// is invalid), opens the destinations, serves the metrics, runs until ctx
// is cancelled and flushes the last window. New then Run is the same run
// without the privilege check, the listener and the summary (tests).
//
// Layering (checked by internal/layers): agent is the top library layer,
// over calibrate, export, the run libraries (timing, sampler), push, the
// engine and the leaves; only the programs (cmd, bench) import it.
package agent
