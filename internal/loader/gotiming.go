// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/symtab"
)

// Cookie bits of the Go probes (bpf/gotiming.bpf.c): the target index in
// the low 32 bits; goCookieCheck marks an entry probe on the stack-bound
// check's JBE (GO_COOKIE_CHECK); an exit probe's SP adjustment sits at
// goCookieSPShift (GO_COOKIE_SP_SHIFT).
const (
	goCookieCheck   = 1 << 32
	goCookieSPShift = 40
)

// GoSite is where one Go target is probed.
type GoSite struct {
	// Target is the target's display name.
	Target string
	// Sites are the entry and return probe addresses (virtual addresses
	// in the binary).
	Sites symtab.ProbeSites
	// Offsets are the runtime.g offsets the probes read.
	Offsets symtab.GoOffsets
	// InlinedInto names the functions into which the target was also
	// inlined (from DWARF; empty when there is none or no DWARF). Calls
	// there run none of the target's own code and are not counted: show it
	// as a warning beside the target's results.
	InlinedInto []string
}

// goObjects are the Go programs loaded for one binary, with the sites
// attached; they are kept with the session's closers.
type goObjects struct {
	objs                               io.Closer // bpf.GoTimingObjects or bpf.GomultiObjects
	stats                              *ebpf.Map
	entry, exit, entryMulti, exitMulti *ebpf.Program
	echo, echoMulti                    *ebpf.Program
	binary                             string
	sites                              []GoSite
}

// Close releases the loaded programs and maps.
func (g *goObjects) Close() error { return g.objs.Close() }

// GoStats are the Go programs' counters, summed over CPUs.
type GoStats struct {
	// Morestack counts entry firings skipped because the stack check
	// failed: the function runs its prologue again after runtime.morestack
	// and is counted then.
	Morestack uint64
	// Expired counts entries whose RET never came (a panic or
	// runtime.Goexit), found and expired when the goroutine entered the
	// function again at the same depth; they are also in the targets'
	// orphans.
	Expired uint64
	// NoGoroutine counts firings where the goroutine could not be read.
	NoGoroutine uint64
	// Sites are the probe sites of every Go target.
	Sites []GoSite
}

// GoStats returns the Go programs' counters (zero when the session times
// no Go function).
func (s *Session) GoStats() (GoStats, error) {
	if s.stopped && s.finalGo != nil {
		return *s.finalGo, nil
	}
	var out GoStats
	for _, c := range s.closers {
		g, ok := c.(*goObjects)
		if !ok {
			continue
		}
		out.Sites = append(out.Sites, g.sites...)
		var per []bpf.GoTimingGoProbeStats
		if err := g.stats.Lookup(uint32(0), &per); err != nil {
			return out, fmt.Errorf("read Go probe statistics of %s: %w", g.binary, err)
		}
		for _, p := range per {
			out.Morestack += p.Morestack
			out.Expired += p.Expired
			out.NoGoroutine += p.NoG
		}
	}
	return out, nil
}

// loadGoObjects loads the Go programs for one binary, with its runtime.g
// offsets: the multi-uprobe versions too where the kernel has them.
func loadGoObjects(s *Session, bin string, offs symtab.GoOffsets) (*goObjects, error) {
	objs := &goObjects{binary: bin}
	multi := !s.opts.SingleLinks && HaveUprobeMulti() == nil
	var spec *ebpf.CollectionSpec
	var err error
	if multi {
		spec, err = bpf.LoadGomulti()
	} else {
		spec, err = bpf.LoadGoTiming()
	}
	if err != nil {
		return nil, fmt.Errorf("read the Go timing BPF object: %w", err)
	}
	if err := setConstants(spec, map[string]any{
		"go_goid_off":    offs.Goid,
		"go_stackhi_off": offs.StackHi,
	}); err != nil {
		return nil, err
	}
	if multi {
		var o bpf.GomultiObjects
		if err := s.LoadShared(spec, &o); err != nil {
			return nil, err
		}
		objs.objs, objs.stats = &o, o.GoStats
		objs.entry, objs.exit, objs.entryMulti, objs.exitMulti = o.GoEntry, o.GoExit, o.GoEntryMulti, o.GoExitMulti
		objs.echo, objs.echoMulti = o.GoEcho, o.GoEchoMulti
	} else {
		var o bpf.GoTimingObjects
		if err := s.LoadShared(spec, &o); err != nil {
			return nil, err
		}
		objs.objs, objs.stats = &o, o.GoStats
		objs.entry, objs.exit, objs.echo = o.GoEntry, o.GoExit, o.GoEcho
	}
	return objs, nil
}

// attachGo attaches the Go programs to Go functions: a uprobe at entry
// (on the stack check's JBE where possible) and one on every RET, never a
// uretprobe. One set of programs is loaded per binary, with that binary's
// runtime.g offsets.
func attachGo(s *Session, ts []*Target) error {
	bins, byBin := groupBy(ts, func(t *Target) string { return t.Spec.Binary })
	for _, bin := range bins {
		if err := attachGoBinary(s, bin, byBin[bin]); err != nil {
			return err
		}
	}
	return nil
}

func attachGoBinary(s *Session, bin string, ts []*Target) error {
	tab, err := symtab.Open(bin)
	if err != nil {
		return fmt.Errorf("read symbols of %s: %w", bin, err)
	}
	defer tab.Close()
	if tab.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s is a Go executable for %v: tickprof times Go functions on amd64 only so far", bin, tab.Machine)
	}
	offs, err := tab.GoRuntimeOffsets()
	if err != nil {
		return err
	}
	sites := make([]symtab.ProbeSites, len(ts))
	names := make([]string, len(ts))
	for i, t := range ts {
		sites[i], err = goSites(tab, t)
		if err != nil {
			return err
		}
		names[i] = t.Spec.Symbol
	}
	// Best effort: a binary without DWARF cannot tell.
	inlined, _ := tab.InlinedIntoAll(names)

	objs, err := loadGoObjects(s, bin, offs)
	if err != nil {
		return err
	}
	s.AddCloser(objs)

	for i, t := range ts {
		objs.sites = append(objs.sites, GoSite{Target: t.Name, Sites: sites[i], Offsets: offs, InlinedInto: inlined[t.Spec.Symbol]})
	}
	entries, exits, err := goRequests(tab, bin, ts, sites)
	if err != nil {
		return err
	}
	for _, e := range entries {
		s.addEchoSite(e.t, bin, e.offset, objs.echo, objs.echoMulti)
	}
	// Every exit site is attached before any entry (see attachUser), and
	// entries are detached before every exit: an entry whose RET probe is
	// gone would be expired (and counted) by the next call.
	return s.linkUprobes(func() error {
		if err := s.attachUprobes(s.ctx, exits, false, false, objs.exit, objs.exitMulti); err != nil {
			return err
		}
		return s.attachUprobes(s.ctx, entries, false, true, objs.entry, objs.entryMulti)
	})
}

// goRequests are the uprobes of Go targets ts of bin: one entry per
// target, cookie = index (| goCookieCheck on the stack check's JBE), and
// one per exit site, cookie = index | SP adjustment << goCookieSPShift.
func goRequests(tab *symtab.Table, bin string, ts []*Target, sites []symtab.ProbeSites) (entries, exits []uprobeReq, err error) {
	for i, t := range ts {
		ps := sites[i]
		cookie := uint64(t.Index)
		if ps.EntryCheck {
			cookie |= goCookieCheck
		}
		off, err := tab.FileOffset(ps.Entry)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		entries = append(entries, uprobeReq{t: t, binary: bin, offset: off, cookie: cookie})
		for _, e := range ps.Exits {
			if e.SPAdjust > 0xff {
				return nil, nil, fmt.Errorf("%s: exit site %#x: SP adjustment %d out of range", t.Name, e.Addr, e.SPAdjust)
			}
			off, err := tab.FileOffset(e.Addr)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
			}
			exits = append(exits, uprobeReq{t: t, binary: bin, offset: off, cookie: uint64(t.Index) | e.SPAdjust<<goCookieSPShift})
		}
	}
	return entries, exits, nil
}

// goSites finds the probe sites of one target and explains when there are
// none.
func goSites(tab *symtab.Table, t *Target) (symtab.ProbeSites, error) {
	sym, ok := tab.FuncSymbol(t.Spec.Addr)
	if !ok || sym.Value != t.Spec.Addr {
		return symtab.ProbeSites{}, fmt.Errorf("%s: no function starts at %#x in %s", t.Name, t.Spec.Addr, t.Spec.Binary)
	}
	ps, err := tab.ProbeSites(sym)
	if errors.Is(err, symtab.ErrNoReturn) {
		return ps, fmt.Errorf("cannot time %v; its entry can still be counted with `tickprof sample --count`", err)
	}
	if err != nil {
		return ps, fmt.Errorf("find the probe sites of %s: %w", t.Name, err)
	}
	return ps, nil
}

// GoNotFoundHint explains why a Go function is missing from a binary's
// symbols: it was inlined into every caller (named, when DWARF tells).
// It returns "" when the binary does not say.
func GoNotFoundHint(binary, name string) string {
	tab, err := symtab.Open(binary)
	if err != nil || !tab.IsGo {
		return ""
	}
	defer tab.Close()
	into, err := tab.InlinedInto(name)
	if err != nil || len(into) == 0 {
		return ""
	}
	if len(into) > 3 {
		into = append(into[:3], fmt.Sprintf("%d more", len(into)-3))
	}
	return fmt.Sprintf("%s was inlined into %s and has no code of its own to probe: time its caller, or rebuild with //go:noinline on it", name, strings.Join(into, ", "))
}
