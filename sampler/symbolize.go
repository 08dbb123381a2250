// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/unwind"
)

// symbolizer turns raw stacks into profile locations and mappings.
type symbolizer struct {
	d        *Profile
	kallsyms kernelTable
	kernMap  int
	py       *pyState
	maps     map[string]int
	// imgMaps caches maps by image and mapping index: the key of maps
	// was formatted for every address (8% of a window's CPU with 20
	// processes watched).
	imgMaps map[imgMapping]int
	locs    map[locKey]int
	// pyTramp marks the locations of CPython's -X perf trampolines (named
	// from the perf map): a sample whose Python frames were read from the
	// interpreter names each function once, at its eval-loop frame.
	pyTramp map[int]bool
	// dl bounds and cancels the downloads of debug files (downloads).
	dl context.Context
}

// downloadBudget bounds the time one symbolization spends downloading
// debug files from debuginfod servers: the output must not wait on a slow
// server (a file not downloaded in time is looked for again at the next
// symbolization, and found in the cache once a download completes).
const downloadBudget = 4 * time.Second

// downloads is the context debug-file downloads run under: the caller's
// (Run and RunWindows set it), so that the caller's interrupt cancels
// them.
func (s *Session) downloads() context.Context {
	if s.dlCtx != nil {
		return s.dlCtx
	}
	return context.Background()
}

// kernelTable names kernel addresses: the whole kallsyms table, one read
// for a profile's addresses, or one that grows with the windows'.
type kernelTable interface {
	Lookup(addr uint64) (symbolize.KernelSym, bool)
	Range() (lo, hi uint64)
}

type locKey struct {
	mapping int
	addr    uint64
	leaf    bool
	pid     int // for addresses outside every mapping
}

// profile symbolizes everything gathered so far into a CPU profile; final
// says the session symbolizes once only (Run, not a window).
func (s *Session) profile(final bool) (*Profile, error) {
	c0 := selfCPU()
	defer func() { s.symCPU += selfCPU() - c0 }()
	start, dur := s.Span()
	d := &Profile{
		Period:   int64(math.Round(s.period())),
		Start:    start,
		Duration: dur,
	}
	dl, cancel := context.WithTimeout(s.downloads(), downloadBudget)
	defer cancel()
	sy := &symbolizer{d: d, kernMap: -1, py: &s.py, maps: map[string]int{}, imgMaps: map[imgMapping]int{}, locs: map[locKey]int{}, pyTramp: map[int]bool{}, dl: dl}
	ks, kerr := s.kernelSymsFor(final)
	if kerr == nil {
		sy.kallsyms = ks
	} else {
		d.Comments = append(d.Comments, "kernel frames not symbolized: "+kerr.Error())
	}
	pids := map[int]bool{}
	keys := make([]string, 0, len(s.stacks))
	for k, st := range s.stacks {
		keys = append(keys, k)
		pids[st.proc.Pid()] = true
	}
	sort.Strings(keys) // deterministic output
	// Lines and inlined calls are read for these addresses only: once,
	// or growing with the windows.
	tell := (*symbolize.Image).Expect
	if !final {
		tell = (*symbolize.Image).Meet
	}
	for _, st := range s.stacks {
		for i, a := range st.user {
			tell(st.proc, a, i == 0 && len(st.kern) == 0)
			if i == 0 && len(st.kern) > 0 {
				tell(st.proc, a, true) // as schedIdle locates it
			}
		}
	}
	if !final {
		s.procs.GrowTables(dl)
	}
	stops := map[walkStop]int64{}
	pyLost := map[string]int64{}
	var total int64
	for _, k := range keys {
		st := s.stacks[k]
		if st.count == 0 && st.off == nil || s.schedIdle(st) {
			continue // an off-CPU interval not ended yet, or a Go thread idle
		}
		d.Samples = append(d.Samples, sy.sample(st, s.cfg.All || len(pids) > 1))
		if st.stop.Reason != "" {
			stops[st.stop] += st.count
		}
		if st.pyLost != "" {
			pyLost[st.pyLost] += st.count
		}
		total += st.count
	}
	d.Comments = append(d.Comments, stopComments(stops, total)...)
	d.Comments = append(d.Comments, s.idleComments()...)
	d.Comments = append(d.Comments, pyComments(pyLost, total)...)
	calls, err := s.Calls()
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		d.Calls = append(d.Calls, CallCount{Function: c.Function, Calls: c.Calls})
	}
	sy.mainFirst(s.mainExe())
	d.Comments = append(d.Comments, s.runComments(len(pids))...)
	return d, nil
}

// kernelSymsFor returns the kernel's symbols for the stacks gathered:
// when the session symbolizes once (final) and has not read them for
// itself already, only those the stacks' addresses need; for a window,
// the session's growing table, grown to hold them.
func (s *Session) kernelSymsFor(final bool) (kernelTable, error) {
	if !final {
		return s.windowKernelSyms()
	}
	if s.ksyms != nil {
		return s.kernelSyms()
	}
	return symbolize.ReadKallsymsFor(s.kernelLooks())
}

// kernelLooks are the addresses of the stacks' kernel frames as kernel
// symbols are looked up: a return address's call is the byte before it.
func (s *Session) kernelLooks() []uint64 {
	var addrs []uint64
	for _, st := range s.stacks {
		for i, a := range st.kern {
			if i > 0 {
				a-- // a return address (kernel, below)
			}
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// sample symbolizes one distinct stack (with its process ID when withPid).
func (sy *symbolizer) sample(st *rawStack, withPid bool) Sample {
	sample := Sample{Count: st.count, Off: st.off, Tid: st.tid}
	if withPid {
		sample.Pid = int64(st.proc.Pid())
	}
	for i, a := range st.kern {
		sample.Locations = append(sample.Locations, sy.kernel(a, i == 0))
	}
	outer, outerFile := "", ""
	segs := sy.py.segments(st.py)
	for i, a := range st.user {
		li, fn := sy.user(st.proc, a, i == 0 && len(st.kern) == 0)
		if len(st.py) > 0 && sy.pyTramp[li] {
			continue
		}
		if len(segs) > 0 && isEvalLoop(fn) {
			// The eval loop's frame gives way to the Python frames it runs.
			sample.Locations = sy.pythonFrames(sample.Locations, segs[0])
			segs = segs[1:]
			continue
		}
		sample.Locations = append(sample.Locations, li)
		outer, outerFile = fn, ""
		if m := sy.d.Locations[li].Mapping; m >= 0 {
			outerFile = sy.d.Mappings[m].File
		}
	}
	for _, seg := range segs {
		// More Python frames than eval-loop frames (a native stack cut
		// short): the rest go to the root end.
		sample.Locations = sy.pythonFrames(sample.Locations, seg)
	}
	sample.Truncated = st.truncated(outer, outerFile)
	return sample
}

// truncated says whether a stack whose outermost user frame is the
// function outer in outerFile ended before its root.
func (st *rawStack) truncated(outer, outerFile string) bool {
	switch {
	case st.flags&(flagKernFull|flagUserFull|flagKernErr|flagUserErr) != 0 && !(st.unwound && st.stop.Reason == "" && st.flags&(flagKernFull|flagKernErr) == 0):
		return true
	case st.unwound:
		// Call frame information says where a stack ends.
		return st.stop.Reason != ""
	case len(st.user) == 0:
		// A user process interrupted without a user stack lost it;
		// kernel threads (no executable mappings) have none.
		return len(st.proc.Maps()) > 0
	}
	return !unwind.EndsStack(outer, outerFile)
}

// runComments are the profile's comments on the run: counts, and the
// stack copies' size.
func (s *Session) runComments(procs int) []string {
	st := s.Stats()
	out := []string{fmt.Sprintf("tickprof sample -F %d: %d samples kept, %d lost to a full ring buffer, %d processes", s.cfg.Frequency, st.Kept, st.Dropped, procs)}
	if s.copies > 0 {
		out = append(out, fmt.Sprintf("user stacks unwound by call frame information from a copy of up to %d bytes: %d bytes copied per sample on average (%d samples)",
			s.cfg.stackBytes(), s.copied/s.copies, s.copies))
	}
	return out
}

// mainExe is the executable of the first target, if known.
func (s *Session) mainExe() string {
	for _, pid := range s.cfg.PIDs {
		if img, ok := s.procs.Current(pid); ok && img.Exe() != "" {
			return img.Exe()
		}
	}
	return s.cfg.Exe
}

// kernel returns the location of a kernel address.
func (sy *symbolizer) kernel(addr uint64, leaf bool) int {
	if sy.kernMap < 0 {
		m := ProfileMapping{File: "[kernel.kallsyms]", Start: addr, Limit: addr + 1}
		if sy.kallsyms != nil {
			lo, hi := sy.kallsyms.Range()
			m.Start, m.Limit, m.Symbolized = lo, hi+1, true
		}
		sy.kernMap = len(sy.d.Mappings)
		sy.d.Mappings = append(sy.d.Mappings, m)
	}
	m := &sy.d.Mappings[sy.kernMap]
	if addr < m.Start {
		m.Start = addr
	}
	if addr >= m.Limit {
		m.Limit = addr + 1
	}
	k := locKey{mapping: sy.kernMap, addr: addr, leaf: leaf}
	if i, ok := sy.locs[k]; ok {
		return i
	}
	loc := Location{Address: addr, Mapping: sy.kernMap}
	if sy.kallsyms != nil {
		look := addr
		if !leaf {
			look-- // a return address: the call is the instruction before
		}
		if ks, ok := sy.kallsyms.Lookup(look); ok {
			loc.Function = ks.Name
			if ks.Module != "" {
				loc.Function += " [" + ks.Module + "]"
			}
		}
	}
	return sy.add(k, loc)
}

// user returns the location of a user address of a process image and its
// function name ("" when unknown).
func (sy *symbolizer) user(img *symbolize.Image, addr uint64, leaf bool) (int, string) {
	mi, ok := img.Find(addr)
	if !ok {
		k := locKey{mapping: -1, addr: addr, pid: img.Pid()}
		if i, ok := sy.locs[k]; ok {
			return i, ""
		}
		return sy.add(k, Location{Address: addr, Mapping: -1}), ""
	}
	pm := sy.mappingOf(img, mi)
	k := locKey{mapping: pm, addr: addr, leaf: leaf}
	if i, ok := sy.locs[k]; ok {
		return i, sy.d.Locations[i].Function
	}
	sl := img.LocateContext(sy.dl, addr, leaf)
	loc := Location{Address: addr, Mapping: pm}
	if n := len(sl.Frames); n > 0 {
		fr := sl.Frames[n-1]
		loc.Function, loc.File, loc.Line = fr.Function, fr.File, fr.Line
		for _, in := range sl.Frames[:n-1] {
			loc.Inlined = append(loc.Inlined, Line(in))
		}
	}
	if sl.Lines {
		sy.d.Mappings[pm].Lines = true
	}
	if sl.Inlines {
		sy.d.Mappings[pm].Inlines = true
	}
	i := sy.add(k, loc)
	if sl.PerfMap && loc.Line == 0 && strings.HasSuffix(loc.File, ".py") {
		sy.pyTramp[i] = true // "py::FUNC:FILE.py"
	}
	return i, loc.Function
}

// imgMapping is mapping i of an image.
type imgMapping struct {
	img *symbolize.Image
	i   int
}

// mappingOf returns the profile mapping of mapping mi of img (mapping).
func (sy *symbolizer) mappingOf(img *symbolize.Image, mi int) int {
	k := imgMapping{img, mi}
	if pm, ok := sy.imgMaps[k]; ok {
		return pm
	}
	pm := sy.mapping(img.Mapping(mi))
	sy.imgMaps[k] = pm
	return pm
}

// mapping returns the profile mapping of an executable mapping, adding it
// on first use.
func (sy *symbolizer) mapping(m symbolize.Mapping) int {
	mk := fmt.Sprintf("%x-%x-%x-%s", m.Start, m.Limit, m.Offset, m.FileKey()+m.Path)
	if pm, ok := sy.maps[mk]; ok {
		return pm
	}
	em := ProfileMapping{Start: m.Start, Limit: m.Limit, Offset: m.Offset, File: m.File, BuildID: m.BuildID, Symbolized: m.Symbolized}
	pm := len(sy.d.Mappings)
	sy.d.Mappings = append(sy.d.Mappings, em)
	sy.maps[mk] = pm
	return pm
}

func (sy *symbolizer) add(k locKey, loc Location) int {
	i := len(sy.d.Locations)
	sy.d.Locations = append(sy.d.Locations, loc)
	sy.locs[k] = i
	return i
}

// mainFirst moves the mappings of the main executable to the front, as Go's
// profiles have it (pprof takes the first mapping as the main binary).
func (sy *symbolizer) mainFirst(exe string) {
	if exe == "" || len(sy.d.Mappings) < 2 {
		return
	}
	order := make([]int, 0, len(sy.d.Mappings))
	for i, m := range sy.d.Mappings {
		if m.File == exe {
			order = append(order, i)
		}
	}
	for i, m := range sy.d.Mappings {
		if m.File != exe {
			order = append(order, i)
		}
	}
	newIdx := make([]int, len(order))
	maps := make([]ProfileMapping, len(order))
	for n, old := range order {
		newIdx[old] = n
		maps[n] = sy.d.Mappings[old]
	}
	sy.d.Mappings = maps
	for i := range sy.d.Locations {
		if l := &sy.d.Locations[i]; l.Mapping >= 0 {
			l.Mapping = newIdx[l.Mapping]
		}
	}
}
