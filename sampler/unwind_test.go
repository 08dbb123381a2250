// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// stackHas reports whether a sample's stack names fn.
func stackHas(s *profile.Sample, fn func(string) bool) bool {
	for _, l := range s.Location {
		for _, ln := range l.Line {
			if fn(ln.Function.Name) {
				return true
			}
		}
	}
	return false
}

// userRoot reports whether a stack reaches the start of its process or
// thread.
func userRoot(name string) bool {
	switch name {
	case "main", "start_thread", "clone3", "__clone3":
		return true
	}
	return false
}

// TestUnwindFrameless samples testdata/sample/frameless.c, built without
// frame pointers: at least 99% of its stacks must reach main or their
// thread's start, also those through a signal handler (above the kernel's
// sigreturn trampoline), qsort's callback, the vDSO and PLT stubs, and no
// frame may lie outside an executable mapping.
//
// The share is checked with a one-sided bound at 99.9% confidence: a
// sampler whose stacks are complete 99% of the time fails it in at most
// 0.05% of runs.
func TestUnwindFrameless(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "sample/frameless.c", "frameless", "-O2", "-fomit-frame-pointer", "-fasynchronous-unwind-tables", "-pthread")
	d, p, _ := sampleCommand(t, 999, nil, bin, "3")
	var n, complete int64
	groups := map[string][2]int64{} // samples, complete
	for _, s := range p.Sample {
		c := s.Value[0]
		n += c
		ok := stackHas(s, userRoot)
		if ok {
			complete += c
		}
		for name, match := range map[string]func(string) bool{
			"signal handler": func(f string) bool { return f == "in_handler" },
			"qsort callback": func(f string) bool { return f == "cmp" },
			"vDSO":           func(f string) bool { return strings.Contains(f, "vdso") },
			"PLT callers":    func(f string) bool { return f == "plt_calls" },
		} {
			if stackHas(s, match) {
				g := groups[name]
				g[0] += c
				if ok {
					g[1] += c
				}
				groups[name] = g
			}
		}
	}
	share, err := estimate.Share(uint64(complete), uint64(n), estimate.Options{Confidence: 0.998})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d samples reach main or a thread start: %.4f [%.4f, %.4f]", complete, n, share.Share, share.Low, share.High)
	if share.High < 0.99 {
		t.Errorf("stacks complete in %.2f%% [%.2f, %.2f] of samples, want at least 99%%\n%s",
			100*share.Share, 100*share.Low, 100*share.High, strings.Join(d.Comments, "\n"))
	}
	for name, g := range groups {
		t.Logf("%s: %d of %d samples complete", name, g[1], g[0])
		if g[0] == 0 {
			t.Errorf("no sample in the %s", name)
			continue
		}
		if float64(g[1]) < 0.9*float64(g[0]) {
			t.Errorf("%s: only %d of %d samples reach main", name, g[1], g[0])
		}
	}
	if len(groups) < 4 {
		t.Errorf("some cases had no samples: %v", groups)
	}
	for _, l := range p.Location {
		if l.Mapping == nil && !(len(l.Line) == 1 && l.Line[0].Function.Name == export.TruncatedFrame) {
			t.Errorf("frame %#x outside every mapping", l.Address)
		}
	}
}

// TestUnwindGoVDSO samples testdata/sample/gonow, a Go program reading the
// clock: Go calls the vDSO on the thread's system stack, so samples in
// time.now and the vDSO must continue on the goroutine's stack to
// main.spinNow and main.main, in at least 99% of them (a one-sided bound at
// 99.9% confidence: a sampler complete 99% of the time fails in at most
// 0.05% of runs).
func TestUnwindGoVDSO(t *testing.T) {
	bpftest.Require(t)
	bin := filepath.Join(t.TempDir(), "gonow")
	build := exec.Command(goTool(t), "build", "-o", bin, filepath.Join("..", "testdata", "sample", "gonow", "main.go"))
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gonow: %v\n%s", err, b)
	}
	d, p, _ := sampleCommand(t, 999, nil, bin, "3s")
	var n, passed int64
	for _, s := range p.Sample {
		if !stackHas(s, func(f string) bool { return f == "time.now" || strings.HasPrefix(f, "__vdso_") }) {
			continue
		}
		n += s.Value[0]
		if stackHas(s, func(f string) bool { return f == "main.spinNow" }) && stackHas(s, func(f string) bool { return f == "main.main" }) {
			if passed == 0 {
				t.Logf("%s", stackNames(s))
			}
			passed += s.Value[0]
		}
	}
	if n == 0 {
		t.Fatal("no samples in time.now or the vDSO")
	}
	share, err := estimate.Share(uint64(passed), uint64(n), estimate.Options{Confidence: 0.998})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d samples in time.now or the vDSO reach main.main: %.4f [%.4f, %.4f]", passed, n, share.Share, share.Low, share.High)
	if share.High < 0.99 {
		t.Errorf("%d of %d samples complete\n%s", passed, n, strings.Join(d.Comments, "\n"))
	}
}

// TestUnwindCgo samples testdata/sample/gocgo: Go calling C (built without
// frame pointers) and C calling back into Go. Samples in the C functions
// must carry their C callers and then the Go callers on the goroutine's
// stack (main.callC, main.main), and samples in the Go callback the Go
// frames before the cgo call (main.callCGo, main.main), in at least 99% of
// each group: a one-sided bound at 99.9% confidence, which a sampler
// complete 99% of the time fails in at most 0.05% of runs per group.
func TestUnwindCgo(t *testing.T) {
	bpftest.Require(t)
	testtarget.NeedGCC(t)
	bin := filepath.Join(t.TempDir(), "gocgo")
	build := exec.Command(goTool(t), "build", "-o", bin, filepath.Join("..", "testdata", "sample", "gocgo", "main.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gocgo: %v\n%s", err, b)
	}
	d, p, _ := sampleCommand(t, 999, nil, bin, "3s")
	groups := []struct {
		name      string
		in        string   // a function the group's samples are in
		want      []string // callers each must have
		n, passed int64
	}{
		{name: "C called from Go", in: "c_leaf", want: []string{"c_mid", "main.callC", "main.main"}},
		{name: "Go called from C", in: "main.goSpin", want: []string{"main.goBack", "main.callCGo", "main.main"}},
	}
	shown := 0
	for _, s := range p.Sample {
		for i := range groups {
			g := &groups[i]
			if !stackHas(s, func(f string) bool { return f == g.in }) {
				continue
			}
			g.n += s.Value[0]
			ok := true
			for _, w := range g.want {
				ok = ok && stackHas(s, func(f string) bool { return f == w })
			}
			if ok {
				if g.passed == 0 {
					t.Logf("%s: %s", g.name, stackNames(s))
				}
				g.passed += s.Value[0]
			} else if shown < 5 {
				shown++
				t.Logf("%s: incomplete stack %s", g.name, stackNames(s))
			}
		}
	}
	for _, g := range groups {
		if g.n == 0 {
			t.Errorf("%s: no samples", g.name)
			continue
		}
		share, err := estimate.Share(uint64(g.passed), uint64(g.n), estimate.Options{Confidence: 0.998})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d of %d samples reach main.main through their callers: %.4f [%.4f, %.4f]", g.name, g.passed, g.n, share.Share, share.Low, share.High)
		if share.High < 0.99 {
			t.Errorf("%s: %d of %d samples complete\n%s", g.name, g.passed, g.n, strings.Join(d.Comments, "\n"))
		}
	}
}

// stackNames lists a sample's functions, leaf first.
func stackNames(s *profile.Sample) string {
	var out []string
	for _, l := range s.Location {
		for _, ln := range l.Line {
			out = append(out, ln.Function.Name)
		}
	}
	return strings.Join(out, " <- ")
}

// TestUnwindInterpreter samples testdata/sample/interp.c, a bytecode
// interpreter built without frame pointers whose bytecode calls recurse
// into the dispatch loop: samples in the op handlers and in the dispatch
// loop must reach main through every interp_run level (at most 18, the
// depth of the bytecode's recursion), in at least 99% of each group (a
// one-sided bound at 99.9% confidence: a sampler complete 99% of the time
// fails a group in at most 0.05% of runs).
func TestUnwindInterpreter(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "sample/interp.c", "interp", "-O2", "-fomit-frame-pointer", "-fasynchronous-unwind-tables")
	d, p, _ := sampleCommand(t, 999, nil, bin, "3")
	type group struct{ n, passed int64 }
	groups := map[string]*group{"op handlers": {}, "dispatch loop": {}}
	groupOf := map[string]string{"op_hash": "op handlers", "op_lt": "op handlers", "op_add": "op handlers", "interp_run": "dispatch loop"}
	var deepest int
	for _, s := range p.Sample {
		leaf := s.Location[0].Line
		if len(leaf) == 0 {
			continue
		}
		g := groups[groupOf[leaf[len(leaf)-1].Function.Name]]
		if g == nil {
			continue
		}
		g.n += s.Value[0]
		levels := 0
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if ln.Function.Name == "interp_run" {
					levels++
				}
			}
		}
		deepest = max(deepest, levels)
		if levels >= 1 && levels <= 18 && stackHas(s, func(f string) bool { return f == "main" }) {
			g.passed += s.Value[0]
		} else {
			t.Logf("incomplete: %s", stackNames(s))
		}
	}
	t.Logf("deepest stack: %d interp_run levels", deepest)
	if deepest < 10 {
		t.Errorf("deepest stack has %d interp_run levels, want the recursion's (up to 18)", deepest)
	}
	for name, g := range groups {
		if g.n == 0 {
			t.Errorf("no samples in %s", name)
			continue
		}
		share, err := estimate.Share(uint64(g.passed), uint64(g.n), estimate.Options{Confidence: 0.998})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d of %d samples reach main: %.4f [%.4f, %.4f]", name, g.passed, g.n, share.Share, share.Low, share.High)
		if share.High < 0.99 {
			t.Errorf("%s: %d of %d samples complete\n%s", name, g.passed, g.n, strings.Join(d.Comments, "\n"))
		}
	}
}

// TestUnwindBeyondCopy samples testdata/sample/deepfp.c, whose stack (about
// 60 KiB, built with frame pointers) is deeper than the stack copy: the
// program then also walks the frame pointers, and the unwinder continues
// with them where the copy ends, so samples in leaf must reach main through
// all 101 levels of deep() in at least 99% of them (a one-sided bound at
// 99.9% confidence: a sampler complete 99% of the time fails in at most
// 0.05% of runs), and say that frame pointers continued them.
func TestUnwindBeyondCopy(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "sample/deepfp.c", "deepfp", "-O2", "-fno-omit-frame-pointer")
	d, p, _ := sampleCommand(t, 999, nil, bin, "2")
	var n, passed int64
	for _, s := range p.Sample {
		if !stackHas(s, func(f string) bool { return f == "leaf" }) {
			continue
		}
		n += s.Value[0]
		levels := 0
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if ln.Function.Name == "deep" {
					levels++
				}
			}
		}
		if levels == 101 && stackHas(s, func(f string) bool { return f == "main" }) {
			passed += s.Value[0]
		}
	}
	if n == 0 {
		t.Fatal("no samples in leaf")
	}
	share, err := estimate.Share(uint64(passed), uint64(n), estimate.Options{Confidence: 0.998})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d samples in leaf reach main through 101 levels: %.4f [%.4f, %.4f]", passed, n, share.Share, share.Low, share.High)
	comments := strings.Join(d.Comments, "\n")
	if share.High < 0.99 {
		t.Errorf("complete in %.2f%% [%.2f, %.2f] of samples, want at least 99%%\n%s", 100*share.Share, 100*share.Low, 100*share.High, comments)
	}
	if !strings.Contains(comments, "continued by frame pointers") {
		t.Errorf("the profile does not say frame pointers continued the copy:\n%s", comments)
	}
}
