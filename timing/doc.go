// SPDX-License-Identifier: Apache-2.0

// Package timing owns a timing run: it starts the command to time held
// before exec (or checks the process to attach to), resolves the targets,
// loads and attaches the probes, polls them into batches, estimates every
// target after each batch (package estimate), stops at the first stop rule
// that holds (duration, precision, target exit, or the caller's context),
// and builds the result: intervals, caller stacks, and the means corrected
// for the calibrated probe overhead.
//
//	s, err := timing.Open(ctx, cfg) // held command, targets, probes attached
//	defer s.Close()
//	res, err := s.Run(ctx)          // release, poll, stop, result
//
// Package sampler has the same shape. A caller that must act on the
// process before it runs (pin it, change its priority) does so between
// Open and Run; one that cuts its own reports reads the counters with Poll
// (or Read, beside a Run) instead.
//
// The configuration, the result model (Result, TargetResult, Caller) and
// the targets (Target, Clock) are this package's own types; package export
// encodes the result (pprof, JSON); caller stacks are named by
// internal/symbolize, as the sampler's are. Layering (checked by internal/layers):
// timing may import push, the engine and the leaves; not sampler, export,
// calibrate or anything above: the overhead correction comes in through
// the Corrector interface.
package timing
