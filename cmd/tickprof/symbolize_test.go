// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// readProfile parses the pprof file at path.
func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stackString spells locations the way a comparison needs them: address,
// then each line (inlined functions first) as function file:line.
func stackString(locs []*profile.Location) string {
	var b strings.Builder
	for _, l := range locs {
		fmt.Fprintf(&b, "%#x", l.Address)
		for _, ln := range l.Line {
			fmt.Fprintf(&b, " %s %s:%d;", ln.Function.Name, filepath.Base(ln.Function.Filename), ln.Line)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestTimeAndSampleStacksAgree times work in testdata/c/inlined.c (built
// -O2 -g) and then samples the same process: the caller stack of the
// timed calls and the sampled stacks above work are the same locations,
// with the same frames, names, files and lines, the function step inlined
// into level at the return address of work's call included (the two
// commands use one symbolizer). It does so with the DWARF in the binary,
// and with the binary stripped and its DWARF in a debug file found by
// build ID.
func TestTimeAndSampleStacksAgree(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.Inlined(t)
	t.Run("dwarf", func(t *testing.T) { checkStacksAgree(t, bin) })
	t.Run("debugfile", func(t *testing.T) {
		stripped, debug := testtarget.Strip(t, bin)
		id, err := debuginfo.BuildID(stripped)
		if err != nil {
			t.Fatal(err)
		}
		testtarget.DebuginfodCache(t, id, debug)
		checkStacksAgree(t, stripped)
	})
}

// checkStacksAgree runs time and sample on one process of bin.
func checkStacksAgree(t *testing.T, bin string) {
	tp := testtarget.Start(t, exec.Command(bin, "60"), testtarget.ReadyPrefix, nil)
	pid := strconv.Itoa(tp.Pid())
	dir := t.TempDir()
	timeOut, sampleOut := filepath.Join(dir, "time.pb.gz"), filepath.Join(dir, "sample.pb.gz")
	if _, stderr, code := runTickprof(t, "time", "-p", pid, "-u", "work", "--duration", "2s", "--no-correct", "-o", timeOut); code != 0 {
		t.Fatalf("time exited %d:\n%s", code, stderr)
	}
	if _, stderr, code := runTickprof(t, "sample", "-p", pid, "-F", "499", "--duration", "2s", "-o", sampleOut); code != 0 {
		t.Fatalf("sample exited %d:\n%s", code, stderr)
	}
	timed := timedCallerStack(t, readProfile(t, timeOut))
	var through, same int64
	other := map[string]int64{}
	for above, n := range stacksAbove(readProfile(t, sampleOut), "work") {
		through += n
		if above == timed {
			same += n
		} else {
			other[above] += n
		}
	}
	t.Logf("sample: %d of %d samples through work have the same stack above it", same, through)
	if through < 100 || same < through*9/10 {
		for st, n := range other {
			t.Logf("%d samples above work:\n%s", n, st)
		}
		t.Errorf("%d of %d sampled stacks through work agree with time's caller stack, want 90%% of at least 100", same, through)
	}
}

// timedCallerStack is the heaviest caller stack of a time profile, below
// the target's own location, which must hold 90% of the calls and pass
// step and level (with lines) to main.
func timedCallerStack(t *testing.T, p *profile.Profile) string {
	t.Helper()
	timed, timedCalls, allCalls := "", int64(0), int64(0)
	for _, s := range p.Sample {
		if len(s.Location) < 2 {
			continue
		}
		allCalls += s.Value[0]
		if s.Value[0] > timedCalls {
			timed, timedCalls = stackString(s.Location[1:]), s.Value[0]
		}
	}
	if timed == "" || timedCalls < allCalls*9/10 {
		t.Fatalf("time: the heaviest caller stack holds %d of %d calls, want 90%%:\n%s", timedCalls, allCalls, timed)
	}
	t.Logf("time: %d of %d calls from\n%s", timedCalls, allCalls, timed)
	for _, want := range []string{" step inlined.c:", " level inlined.c:", " main inlined.c:"} {
		if !strings.Contains(timed, want) {
			t.Errorf("time's caller stack lacks%s:\n%s", want, timed)
		}
	}
	if strings.Contains(timed, export.TruncatedFrame) {
		t.Errorf("time's caller stack was cut:\n%s", timed)
	}
	return timed
}

// stacksAbove counts the samples of a CPU profile by the part of their
// stack above the location of fn (those not through fn are left out).
func stacksAbove(p *profile.Profile, fn string) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		for j, l := range s.Location {
			if n := len(l.Line); n > 0 && l.Line[n-1].Function.Name == fn {
				out[stackString(s.Location[j+1:])] += s.Value[0]
				break
			}
		}
	}
	return out
}

// TestTimeCallerStacksAcrossExec times work in testdata/c/inlined.c, which
// execs itself once, so that the same process runs in two memory maps: the
// records of each map have their caller stacks symbolized in it, each
// reaching main through step and level, and none is cut (the records
// after the exec meet addresses outside the first map, which rereads it).
func TestTimeCallerStacksAcrossExec(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.Inlined(t)
	out := filepath.Join(t.TempDir(), "time.pb.gz")
	if _, stderr, code := runTickprof(t, "time", "-u", "work", "--no-correct", "-o", out, "--", bin, "1", "4096", "1"); code != 0 {
		t.Fatalf("time exited %d:\n%s", code, stderr)
	}
	p := readProfile(t, out)
	layouts := map[uint64]int64{} // by the address of the first caller frame
	for _, s := range p.Sample {
		if len(s.Location) < 2 {
			continue
		}
		st := stackString(s.Location[1:])
		layouts[s.Location[1].Address] += s.Value[0]
		if !strings.Contains(st, " step inlined.c:") || !strings.Contains(st, " level inlined.c:") || !strings.Contains(st, " main inlined.c:") ||
			strings.Contains(st, export.TruncatedFrame) {
			t.Errorf("%d calls from a stack that does not reach main through step and level:\n%s", s.Value[0], st)
		}
	}
	for a, n := range layouts {
		t.Logf("%d calls with work's caller at %#x", n, a)
	}
	if len(layouts) < 2 {
		t.Errorf("caller stacks from %d memory maps, want one before and one after the exec", len(layouts))
	}
	if c := strings.Join(p.Comments, "\n"); strings.Contains(c, "ended before their outermost frame") {
		t.Errorf("caller stacks were cut:\n%s", c)
	}
}
