// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/sampler"
)

// pyFrame is one Python frame of a sample.
type pyFrame struct {
	fn, file string
	line     int64
}

// pyFrames are a sample's Python frames, leaf first: the locations of
// .py files, which have no mapping.
func pyFrames(s *profile.Sample) []pyFrame {
	var out []pyFrame
	for _, l := range s.Location {
		if l.Mapping != nil || len(l.Line) != 1 || !strings.HasSuffix(l.Line[0].Function.Filename, ".py") {
			continue
		}
		out = append(out, pyFrame{l.Line[0].Function.Name, l.Line[0].Function.Filename, l.Line[0].Line})
	}
	return out
}

// installedPythons are the interpreters to test under; missing ones are
// logged, and the test skips when none is installed.
func installedPythons(t *testing.T) []testtarget.Python {
	t.Helper()
	found, missing := testtarget.Pythons(t)
	for _, m := range missing {
		t.Logf("not installed, not tested: %s", m)
	}
	if len(found) == 0 {
		t.Skip("no CPython 3.8-3.13 installed (pyenv, /usr/bin/python3.11)")
	}
	return found
}

// qualname is how version minor names a method of class Worker: by its
// qualified name from 3.11, by its name before (code objects have no
// qualified name).
func qualname(minor int, class, fn string) string {
	if minor >= 11 && class != "" {
		return class + "." + fn
	}
	return fn
}

// sourceLines maps each marker to the line of the file that holds it.
func sourceLines(t *testing.T, file string, markers ...string) map[string]int64 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for n := int64(1); sc.Scan(); n++ {
		for _, m := range markers {
			if _, ok := out[m]; !ok && strings.Contains(sc.Text(), m) {
				out[m] = n
			}
		}
	}
	for _, m := range markers {
		if out[m] == 0 {
			t.Fatalf("%s: no line holds %q", file, m)
		}
	}
	return out
}

// TestPythonShares samples testdata/python/burn.py, whose Worker.burn_a
// and burn_b have identical bodies run 30,000 and 10,000 times a round,
// under every installed CPython of 3.8-3.13 (pyenv's and Debian's 3.11):
// burn_a's share of the two must lie within 5 points of 0.75, and at least
// 98% of their samples must hold the whole Python stack, named and placed
// (the function's qualified name, co_name before 3.11; burn.py; the lines
// of its body, of main's call, of the module's call of main), in place of
// the eval-loop frames and above the native stack down to main.
//
// The program runs for 1 s of CPU time, about 1,950 samples of the two at
// 1999 Hz whatever the machine's load; the test needs 1,000: the binomial
// spread of the share is then at most 1.4 points, and 5 points at least
// 3.6 standard deviations, a false alarm in under one run in 3,000 if the
// work's true split is 0.75 (the loop between the calls costs under 1%).
func TestPythonShares(t *testing.T) {
	bpftest.Require(t)
	script, _ := filepath.Abs("../testdata/python/burn.py")
	at := sourceLines(t, script, "def burn_a", "def burn_b", "return x", "w.burn_a(", "w.burn_b(", "    main()")
	for _, py := range installedPythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			_, p, st := sampleWith(t, sampler.Config{Frequency: 1999}, py.Exe, script, "1")
			want := map[string][2]int64{
				qualname(py.Minor, "Worker", "burn_a"): {at["def burn_a"], at["def burn_b"] - 1},
				qualname(py.Minor, "Worker", "burn_b"): {at["def burn_b"], at["w.burn_a("] - 1},
			}
			calls := map[string]int64{qualname(py.Minor, "Worker", "burn_a"): at["w.burn_a("], qualname(py.Minor, "Worker", "burn_b"): at["w.burn_b("]}
			counts := map[string]int64{}
			var whole, all int64
			for _, s := range p.Sample {
				fr := pyFrames(s)
				var fn string
				for _, f := range fr {
					if _, ok := want[f.fn]; ok {
						fn = f.fn
					}
				}
				if fn == "" {
					continue
				}
				n := s.Value[0]
				counts[fn] += n
				all += n
				body := want[fn]
				if len(fr) == 3 && fr[0].fn == fn && fr[0].line >= body[0] && fr[0].line <= body[1] &&
					fr[1].fn == "main" && fr[1].line == calls[fn] && fr[2].fn == "<module>" && fr[2].line == at["    main()"] &&
					fr[0].file == script && fr[2].file == script &&
					stackHas(s, func(f string) bool { return f == "main" }) &&
					!stackHas(s, func(f string) bool { return strings.HasPrefix(f, "_PyEval_EvalFrameDefault") }) {
					whole += n
				} else if all-whole <= 5*n {
					t.Logf("incomplete: %s %v", stackNames(s), fr)
				}
			}
			a, b := counts[qualname(py.Minor, "Worker", "burn_a")], counts[qualname(py.Minor, "Worker", "burn_b")]
			t.Logf("%d samples of the two (%d kept, %d of Python processes; lost: no thread %d, read %d, deep %d), burn_a %d, burn_b %d: share %.4f; %d with the whole stack",
				all, st.Kept, st.Python, st.PythonNoThread, st.PythonReadFailed, st.PythonTooDeep, a, b, float64(a)/float64(a+b), whole)
			if a+b < 1000 {
				t.Fatalf("%d samples in burn_a and burn_b, want at least 1,000", a+b)
			}
			if share := float64(a) / float64(a+b); share < 0.70 || share > 0.80 {
				t.Errorf("burn_a's share %.4f, want 0.75 ± 0.05", share)
			}
			if float64(whole) < 0.98*float64(all) {
				t.Errorf("%d of %d samples hold the whole Python stack, want 98%%", whole, all)
			}
		})
	}
}

// TestPythonThreads samples testdata/python/threads.py, whose main thread
// and two other threads each spin in their own function, under every
// CPython of each kind of frame chain (3.10: PyFrameObject; Debian's 3.11:
// _PyCFrame, is_entry; 3.12: _PyCFrame, owner; 3.13: current_frame;
// TestPythonShares runs every version): each function must have samples, and at least 95% of
// them must hold their own thread's whole stack: from the thread's
// function down to threading's Thread._bootstrap (co_name _bootstrap
// before 3.11) and the native start_thread, or for the main thread down to
// <module> and main; no sample may hold two of the functions.
func TestPythonThreads(t *testing.T) {
	bpftest.Require(t)
	script, _ := filepath.Abs("../testdata/python/threads.py")
	for _, py := range installedPythons(t) {
		if py.Minor < 10 || py.Minor == 11 && !strings.Contains(py.Name, "Debian") {
			continue
		}
		t.Run(py.Name, func(t *testing.T) {
			d, p, st := sampleWith(t, sampler.Config{Frequency: 499}, py.Exe, script, "1.5")
			t.Logf("%d samples kept, %d of Python processes; lost: no thread %d, read %d, deep %d; %s", st.Kept, st.Python, st.PythonNoThread, st.PythonReadFailed, st.PythonTooDeep, strings.Join(d.Comments, "; "))
			boot := qualname(py.Minor, "Thread", "_bootstrap")
			roots := map[string][2]string{"spin_alpha": {boot, "start_thread"}, "spin_beta": {boot, "start_thread"}, "spin_main": {"<module>", "main"}}
			total, whole := map[string]int64{}, map[string]int64{}
			for _, s := range p.Sample {
				fr := pyFrames(s)
				var fn []string
				for _, f := range fr {
					if _, ok := roots[f.fn]; ok {
						fn = append(fn, f.fn)
					}
				}
				if len(fn) > 1 {
					t.Errorf("one stack holds %v: %s", fn, stackNames(s))
				}
				if len(fn) != 1 {
					continue
				}
				total[fn[0]] += s.Value[0]
				r := roots[fn[0]]
				if fr[len(fr)-1].fn == r[0] && stackHas(s, func(f string) bool { return f == r[1] }) {
					whole[fn[0]] += s.Value[0]
				} else {
					t.Logf("incomplete: %s", stackNames(s))
				}
			}
			for fn := range roots {
				t.Logf("%s: %d samples, %d with the thread's whole stack", fn, total[fn], whole[fn])
				if total[fn] < 30 {
					t.Errorf("%s: %d samples, want at least 30", fn, total[fn])
				} else if float64(whole[fn]) < 0.95*float64(total[fn]) {
					t.Errorf("%s: %d of %d samples hold the thread's whole stack, want 95%%", fn, whole[fn], total[fn])
				}
			}
		})
	}
}

// TestPythonUnknownVersion samples burn.py under pyenv's CPython 3.7,
// outside the version table: its samples carry no Python frame, and the
// profile's comments count them as lost to an unknown version.
func TestPythonUnknownVersion(t *testing.T) {
	bpftest.Require(t)
	exes, _ := filepath.Glob(filepath.Join(testtarget.PyenvRoot(), "versions", "3.7.*", "bin", "python3.7"))
	if len(exes) == 0 {
		t.Skip("no pyenv CPython 3.7 installed")
	}
	script, _ := filepath.Abs("../testdata/python/burn.py")
	d, p, st := sampleWith(t, sampler.Config{Frequency: 499}, exes[0], script, "0.5")
	for _, s := range p.Sample {
		if fr := pyFrames(s); len(fr) > 0 {
			t.Fatalf("a Python frame under 3.7: %v", fr)
		}
	}
	found := false
	for _, c := range d.Comments {
		if strings.HasPrefix(c, "Python stacks missing or cut:") && strings.Contains(c, "unknown version") {
			found = true
		}
	}
	if !found || st.Python != 0 {
		t.Errorf("3.7's samples not counted as lost to an unknown version (%d walked): %q", st.Python, d.Comments)
	}
}
