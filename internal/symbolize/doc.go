// SPDX-License-Identifier: Apache-2.0

// Package symbolize turns addresses of processes and of the kernel into
// frames, for every pipeline that records them (the sampler's stacks and
// the caller stacks of timed calls), so that both name the same address
// the same way.
//
// It owns:
//
//   - the processes' memory maps (Procs, Image): read on first sight, again
//     after exec (Procs.Exec) and when an address taken after the last read
//     falls outside it (Image.Refresh: a library the dynamic loader or
//     dlopen mapped since), with the mapped files opened at once, so that a
//     process that exits before the end keeps symbolized addresses; a
//     forked child gone before its map was read takes its parent's
//     (Procs.Fork);
//   - the vDSO, which has no file: read from the process's memory and
//     parsed as ELF (vdso.go);
//   - separate debug files, found by build ID through internal/debuginfo
//     for files without their own .symtab, their downloads bounded by the
//     caller's context (Image.LocateContext; file.go);
//   - the frames at an address (Image.Locate): ELF and Go symbols through
//     internal/symtab, lines, and inlined calls from DWARF, each inlined
//     function a frame with its own name and line and its caller a frame at
//     the call's line (inline.go, locate.go);
//   - the unwinding of user stacks with the mapped files' call frame
//     information (Image.Unwind, through internal/unwind), and what a Go
//     program's cgo calls need (gocgo.go);
//   - the kernel's symbols from /proc/kallsyms (kallsyms.go): the whole
//     table, one read for a profile's addresses (kallsymsfor.go), or a
//     table that grows with the addresses of window after window
//     (GrowingKallsyms, kallsymsgrow.go);
//   - for a run that symbolizes window after window, the DWARF read as
//     the windows meet addresses (Image.Meet, Procs.GrowTables; grow.go).
//
// symbolize may import the standard library, x/sys, internal/debuginfo,
// internal/proc, internal/symtab and internal/unwind; it must not import
// the run packages (sampler, timing, internal/loader) that use it.
package symbolize
