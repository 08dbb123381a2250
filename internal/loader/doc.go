// SPDX-License-Identifier: Apache-2.0

// Package loader loads tickprof's timing programs (package bpf), attaches
// them to targets, polls their per-CPU counters into batches and drains
// their crossing records.
//
// # Use
//
// Package timing runs this loop for every caller; by hand it is:
//
//	specs, _ := loader.ResolveUser(pid, "libc:malloc", 256)
//	s, _ := loader.Open(loader.Options{Clock: clk, PID: pid}, specs)
//	defer s.Close()
//	for ... { p, _ := s.Poll() }   // every 200 ms: cumulative counters + a batch
//	s.Stop()                        // last read; Poll returns it, probes stay
//	final, _ := s.Poll()
//	callers := s.Callers()          // per-caller attribution from the records
//	... write the results ...
//	s.Detach(ctx)                   // entries first, in parallel; Close does it too
//
// Large probe sets use multi-uprobe links where the kernel has them (6.6+;
// see uprobes.go), and OpenContext screens user functions for instructions
// the kernel cannot probe before attaching (Session.Skipped). HandOff gives
// the attached links to a helper process (DetachHelper) that detaches them
// even if this process is killed.
//
// A command to start is held before exec with internal/proc's StartHeld
// (ptrace), so that the probes are in place before its first instruction
// runs; Release lets it go.
//
// # Extension contract (target kinds)
//
// Every target kind shares one set of BPF maps (bpf/timing.h): tp_counters
// (per-target per-CPU counters, indexed by Target.Index), tp_entries (entry
// stacks keyed by (id, target): tp_enter/tp_exit, for goroutine keys and
// kernel functions), tp_tasks (one entry stack per thread in task storage:
// tp_task_enter/tp_task_exit), tp_frames (user functions of one process:
// entries kept by the call's stack frame, tp_frame_enter/tp_frame_uexit,
// falling back to tp_tasks), tp_records, tp_stacks, tp_ustack (the scratch
// value of a user function's crossing record with its stack copy, unwound
// and symbolized with internal/symbolize: ustack.go), tp_runstats, tp_zero, and the
// load-time constants tp_clock, tp_exact, tp_tick_ns, tp_filter_tgid,
// tp_want_records, tp_record_ns, tp_record_shift, tp_one_target,
// tp_stack_bytes. A program with its own entry state ends a call with
// tp_account (counters, histogram, crossing record). Each kind has its own
// file (user.go, syscall.go, kfunc.go, gotiming.go, usdt.go) with an attach method
// that attacher names:
//
//	func attachSyscalls(s *Session, ts []*Target) error {
//		var objs bpf.SyscallObjects
//		spec, _ := bpf.LoadSyscall()
//		if err := s.LoadShared(spec, &objs); err != nil { return err }
//		s.AddCloser(&objs)
//		... attach, using t.Index as the counters index (cookie or map) ...
//		s.AddLink(l)
//		return nil
//	}
//
// Open calls each kind's attach method once with all targets of that kind,
// after the shared maps exist. LoadShared sets the timing constants in the
// given CollectionSpec and replaces its copies of the shared maps by the
// session's (sizing them first: tp_counters has one element per target of
// every kind, tp_records the session's ring size), so a program that
// includes timing.h and calls tp_enter / tp_exit writes into the same
// counters the session polls. An attach method may set Target.Name
// (display name) and must return an error that says what to do when the
// kernel lacks what it needs. Detach closes entry links (AddEntryLink)
// first, then exit links (AddExitLink), each set in parallel, then the
// links of AddLink in the reverse order of AddLink, so add every exit link
// before the entry links: entries are then detached first, and no exit
// ever pops an entry pushed before its own probe existed.
//
// Each kind's resolver (ResolveUser here, ResolveSyscall, ResolveKernelFuncs
// in their files) turns a target as written into Specs. Go executables
// resolve to KindGoUser (ResolveUser checks symtab IsGo) and are probed at
// their RET instructions: a uretprobe must never touch a Go program.
//
// Caller stacks are turned into frames by internal/symbolize, the
// symbolizer the sampler uses too: the same memory maps and rereads,
// vDSO, separate debug files and inlined calls (ustack.go).
//
// loader is part of the engine (the layering is checked by
// internal/layers): it imports other engine packages and the leaves (bpf,
// estimate, histogram), never timing, sampler or anything above them.
package loader
