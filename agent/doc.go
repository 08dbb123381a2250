// Package agent runs tickprof continuously: it watches a set of processes
// (PIDs, every process running an executable, or all), samples their stacks
// with the sampler package in consecutive windows, encodes each window of
// each process as a merge-friendly pprof profile (export.EncodeCPUWindow)
// labelled with its service, host, PID, executable, build ID and kernel
// release, and hands it to one push.Pusher per destination. It serves
// Prometheus metrics about itself and a health check (metrics.go).
//
// The caller fills a Config and calls Run, which returns after ctx is
// cancelled and the last window is flushed.
//
// agent imports sampler, timing, loader, export, push, symtab and the
// Prometheus client; nothing imports it but cmd/tickprof.
package agent
