// Package timing owns a timing run: it starts the command to time held
// before exec (or checks the process to attach to), resolves the targets,
// loads and attaches the probes (package loader), polls them into batches,
// estimates every target after each batch (package estimate), stops at the
// first stop rule that holds (duration, precision, target exit, or the
// caller's context), and builds the result: intervals, caller stacks, and
// the means corrected for the calibrated probe overhead.
//
//	s, err := timing.Open(cfg)    // held command, targets, probes attached
//	defer s.Close()
//	run, err := s.Run(ctx, onProgress) // release, poll, stop, result
//
// A caller that must act on the process before it runs (pin it, change its
// priority) or read the programs' statistics does so between Open and Run.
//
// The result model (Result, TargetResult, Caller) is this package's own;
// package export encodes it (pprof, JSON); caller stacks are named by
// internal/symbolize, as the sampler's are. timing may import loader,
// estimate, histogram, internal/rank and internal/symbolize; it must not
// import export,
// calibrate or cmd: the overhead correction comes in through the Corrector
// interface.
package timing
