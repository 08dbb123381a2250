// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/rank"
)

// stack is one sample's functions, leaf first, with its weight.
type stack struct {
	funcs []string
	count int64
	tid   int
}

// stackSet is a profile reduced to function stacks.
type stackSet struct {
	stacks    []stack
	total     int64
	truncated int64  // samples labelled truncated
	copyNote  string // tickprof's comment on the stack copies
}

// readPprof reads the function stacks of a pprof profile (inlined frames
// expanded).
func readPprof(path string) (*stackSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	ss := &stackSet{}
	for _, c := range p.Comments {
		if strings.HasPrefix(c, "user stacks unwound by call frame information") {
			ss.copyNote = c
		}
	}
	for _, s := range p.Sample {
		st := stack{count: s.Value[0]}
		for _, l := range s.Location {
			if len(l.Line) == 0 {
				st.funcs = append(st.funcs, fmt.Sprintf("%#x", l.Address))
			}
			for _, ln := range l.Line {
				st.funcs = append(st.funcs, normalize(ln.Function.Name))
			}
		}
		ss.stacks = append(ss.stacks, st)
		ss.total += st.count
		if len(s.Label["truncated"]) > 0 {
			ss.truncated += st.count
		}
	}
	return ss, nil
}

// readPerfScript reads `perf script -F tid,ip,sym` output: a header line per
// sample, then one frame per line, a blank line between samples.
func readPerfScript(r io.Reader) (*stackSet, error) {
	ss := &stackSet{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var cur *stack
	flush := func() {
		if cur != nil {
			ss.stacks = append(ss.stacks, *cur)
			ss.total += cur.count
			cur = nil
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			flush()
			cur = &stack{count: 1}
			fmt.Sscan(line, &cur.tid)
			continue
		}
		if cur == nil {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 2 {
			cur.funcs = append(cur.funcs, "[unknown]")
			continue
		}
		sym := strings.Join(fs[1:], " ")
		// Drop "+0x12" offsets and " (dso)" suffixes.
		if i := strings.Index(sym, " ("); i >= 0 {
			sym = sym[:i]
		}
		if i := strings.LastIndex(sym, "+0x"); i > 0 {
			sym = sym[:i]
		}
		cur.funcs = append(cur.funcs, normalize(sym))
	}
	flush()
	return ss, sc.Err()
}

// normalize drops symbol versions ("@@GLIBC_2.34") so that names from
// .dynsym and .symtab compare.
func normalize(f string) string {
	if i := strings.Index(f, "@"); i > 0 {
		return f[:i]
	}
	return f
}

// named drops the frames without a function name: addresses, "[unknown]"
// and pseudo-frames, which cannot be matched between profilers.
func named(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if strings.HasPrefix(k, "0x") || strings.HasPrefix(k, "[") || strings.HasPrefix(k, "<") || strings.Contains(k, "+0x") {
			continue
		}
		out[k] = v
	}
	return out
}

// reaches counts the samples whose stack holds one of the named functions.
func (ss *stackSet) reaches(names ...string) int64 {
	var n int64
	for _, s := range ss.stacks {
		for _, f := range s.funcs {
			if contains(names, f) {
				n += s.count
				break
			}
		}
	}
	return n
}

func contains(names []string, f string) bool {
	for _, n := range names {
		if n == f {
			return true
		}
	}
	return false
}

// cumulative returns each function's cumulative sample count (counted once
// per sample).
func (ss *stackSet) cumulative() map[string]int64 {
	out := map[string]int64{}
	for _, s := range ss.stacks {
		seen := map[string]bool{}
		for _, f := range s.funcs {
			if !seen[f] {
				seen[f] = true
				out[f] += s.count
			}
		}
	}
	return out
}

// top returns the n functions with the largest counts.
func top(m map[string]int64, n int) []string {
	keys := rank.ByCount(m)
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

// share is hits/total with its 95% interval, as text.
func share(hits, total int64) string {
	if total <= 0 {
		return "no samples"
	}
	p, err := estimate.Share(uint64(hits), uint64(total), estimate.Options{Confidence: 0.95})
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%.1f%% [%.1f, %.1f] (%d/%d)", 100*p.Share, 100*p.Low, 100*p.High, hits, total)
}

// agree reports whether the 95% interval of the difference of two shares
// holds zero.
func agree(h1, n1, h2, n2 int64) (bool, string) {
	d, err := estimate.DiffProportions(uint64(h1), uint64(n1), uint64(h2), uint64(n2), estimate.Options{Confidence: 0.95})
	if err != nil {
		return false, err.Error()
	}
	ok := d.Low <= 0 && d.High >= 0
	return ok, fmt.Sprintf("%+.1f [%+.1f, %+.1f]", 100*d.Diff, 100*d.Low, 100*d.High)
}
