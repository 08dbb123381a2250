// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	tpbpf "github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/python"
	"github.com/tickprof/tickprof/internal/symbolize"
)

// Why a Python process's sample lacks its Python stack or part of it, as
// the profile's comments name it (bpf/python.h PY_ERR_*, and what user
// space finds).
const (
	pyLostNoThread = "no thread state"
	pyLostRead     = "frame read failed"
	pyLostDeep     = "too deep"
	pyLostVersion  = "unknown version"
)

// pyErrs names bpf/python.h's PY_ERR_* by value.
var pyErrs = [...]string{1: pyLostNoThread, 2: pyLostRead, 3: pyLostDeep}

// pyState is the sampler's view of the Python processes: one resolver per
// process image, and the Python frames seen, interned.
type pyState struct {
	procs  map[int]*pyProc
	frames []python.Frame
	index  map[python.Frame]int32
}

// pyProc is one process image's interpreter: a resolver, or why there is
// none (err: a version outside the table, an unreadable file).
type pyProc struct {
	img uint64
	r   *python.Resolver
	err error
}

// pyFrameSize is sizeof(struct py_frame) (bpf/python.h).
const pyFrameSize = 24

// evalLoop is the native function whose frames the Python frames replace
// (GCC may split off a cold part, "_PyEval_EvalFrameDefault.cold").
const evalLoop = "_PyEval_EvalFrameDefault"

// notePython looks once per process image for a CPython interpreter and
// tells the BPF program of it (python.h py_procs), or forgets the process
// when it runs none (it exec'd another program).
func (s *Session) notePython(img *symbolize.Image) {
	if s.py.procs == nil {
		s.py.procs, s.py.index = map[int]*pyProc{}, map[python.Frame]int32{}
	}
	pid := img.Pid()
	old := s.py.procs[pid]
	if (old != nil && old.img == img.ID()) || img.Err() != nil || s.objs.PyProcs == nil {
		return
	}
	if old != nil && old.r != nil {
		old.r.Close()
	}
	p := &pyProc{img: img.ID()}
	s.py.procs[pid] = p
	in, ok, err := python.Find(pid, img.Maps())
	if ok && err == nil {
		p.r, err = python.NewResolver(pid, in)
	}
	if !ok || err != nil {
		p.err = err
		_ = s.objs.PyProcs.Delete(uint32(pid))
		return
	}
	_ = s.objs.PyProcs.Put(uint32(pid), pyLayout(in)) // best effort: without it the samples have no Python frames
}

// pyLayout is what the BPF walk needs of an interpreter.
func pyLayout(in python.Interpreter) tpbpf.SamplePyProc {
	l := in.Layout
	nameAt, owner := l.CodeName, l.FrameOwner
	if l.HasQualname() {
		nameAt = l.CodeQualname
	}
	if owner == python.None {
		owner = l.FrameCode // read and ignored (3.8-3.10)
	}
	return tpbpf.SamplePyProc{
		Head:          in.InterpHead(),
		ThreadsHead:   int16(l.InterpThreadsHead),
		ThreadNext:    int16(l.ThreadNext),
		ThreadId:      int16(l.ThreadID),
		ThreadFrame:   int16(l.ThreadFrame),
		CframeCurrent: int16(l.CFrameCurrent),
		FramePrevious: int16(l.FramePrevious),
		FrameCode:     int16(l.FrameCode),
		FrameInstr:    int16(l.FrameInstr),
		FrameOwner:    int16(owner),
		CodeName:      int16(nameAt),
		CodeTable:     int16(l.CodeLineTable),
	}
}

// pythonStack is a sample record's Python stack (leaf first, as interned
// frame indices) and why it is missing or cut ("" when whole or when the
// process runs no Python).
func (s *Session) pythonStack(pid int, b []byte, flags uint32, l recordLayout) ([]int32, string) {
	p := s.py.procs[pid]
	if flags&flagPy == 0 {
		if p != nil && errors.Is(p.err, python.ErrUnsupported) {
			return nil, pyLostVersion
		}
		return nil, ""
	}
	le := binary.LittleEndian
	lost := ""
	if e := int(le.Uint16(b[90:])); e > 0 && e < len(pyErrs) {
		lost = pyErrs[e]
	}
	if p == nil || p.r == nil || l.pn == 0 {
		return nil, lost
	}
	raw := make([]python.Raw, l.pn)
	for i := range raw {
		at := l.py + pyFrameSize*i
		raw[i] = python.Raw{Code: le.Uint64(b[at:]), Instr: le.Uint64(b[at+8:]), Stamp: le.Uint64(b[at+16:])}
	}
	frames, failed := p.r.Frames(raw)
	if failed > 0 && lost == "" {
		lost = pyLostRead
	}
	ids := make([]int32, len(frames))
	for i, f := range frames {
		ids[i] = s.py.intern(f)
	}
	return ids, lost
}

func (py *pyState) intern(f python.Frame) int32 {
	if i, ok := py.index[f]; ok {
		return i
	}
	i := int32(len(py.frames))
	py.frames = append(py.frames, f)
	py.index[f] = i
	return i
}

// prunePython forgets the Python processes that are gone (their
// resolvers hold their memory open) and, the window's stacks being cut,
// the interned frames.
func (s *Session) prunePython() {
	for pid, p := range s.py.procs {
		if _, ok := s.procs.Current(pid); ok {
			continue
		}
		if p.r != nil {
			p.r.Close()
		}
		delete(s.py.procs, pid)
		if s.objs.PyProcs != nil {
			_ = s.objs.PyProcs.Delete(uint32(pid)) // gone with the process's exit anyway
		}
	}
	if len(s.stacks) == 0 && s.py.index != nil {
		s.py.frames, s.py.index = nil, map[python.Frame]int32{}
	}
}

// close closes the resolvers.
func (py *pyState) close() {
	for _, p := range py.procs {
		if p.r != nil {
			p.r.Close()
		}
	}
	py.procs = nil
}

// pySegments splits a Python stack (leaf first) into the frames of each
// eval-loop call, innermost first: each segment ends with an entry frame
// (the last may not, when the walk was cut).
func (py *pyState) segments(ids []int32) [][]int32 {
	var out [][]int32
	start := 0
	for i, id := range ids {
		if py.frames[id].Entry {
			out = append(out, ids[start:i+1])
			start = i + 1
		}
	}
	if start < len(ids) {
		out = append(out, ids[start:])
	}
	return out
}

// isEvalLoop says whether a native function is the interpreter's eval
// loop.
func isEvalLoop(fn string) bool {
	return fn == evalLoop || strings.HasPrefix(fn, evalLoop+".")
}

// python returns the location of interned Python frame id.
func (sy *symbolizer) python(id int32) int {
	k := locKey{mapping: -2, addr: uint64(id)}
	if i, ok := sy.locs[k]; ok {
		return i
	}
	f := sy.py.frames[id]
	return sy.add(k, Location{Mapping: -1, Function: f.Function, File: f.File, Line: int64(f.Line)})
}

// pyComments are the profile's comments on the Python stacks: how many
// samples of Python processes lack their Python stack or part of it, by
// reason.
func pyComments(lost map[string]int64, total int64) []string {
	if len(lost) == 0 {
		return nil
	}
	var n int64
	var parts []string
	for r, c := range lost {
		n += c
		parts = append(parts, fmt.Sprintf("%s %d", r, c))
	}
	sort.Strings(parts)
	return []string{fmt.Sprintf("Python stacks missing or cut: %d of %d samples (%s)", n, total, strings.Join(parts, ", "))}
}

// pythonFrames appends the locations of Python frames ids to locs.
func (sy *symbolizer) pythonFrames(locs []int, ids []int32) []int {
	for _, id := range ids {
		locs = append(locs, sy.python(id))
	}
	return locs
}
