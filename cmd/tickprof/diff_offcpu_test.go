// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// sampleOffCPU runs `sample --off-cpu` at probability 0.8 on 150 cycles of
// testdata/sample/offcpu.c (a byte every 10 ms, computeUs of computing
// after each) into dir/name.pb.gz, and returns the file and the worker's
// own measurements.
//
// At 0.5 the estimate's variance, (1-p)/p of the squared intervals, was
// too wide under a load of 27 on 2 CPUs (the waits long and uneven) for the
// drop to exclude zero; at 0.8 it is a quarter of that, and the interval
// is still not zero wide, so that holding the worker's own figure means
// something.
func sampleOffCPU(t *testing.T, bin, dir, name string, computeUs int) (string, map[string]float64) {
	t.Helper()
	file, kv := filepath.Join(dir, name+".pb.gz"), filepath.Join(dir, name+".kv")
	_, errs, code := runTickprof(t, "sample", "--off-cpu", "--off-cpu-prob", "0.8", "-o", file, "--top", "1",
		"--", bin, kv, "10000", strconv.Itoa(computeUs), "150")
	if code != 0 {
		t.Fatalf("sample --off-cpu exited %d: %s", code, errs)
	}
	return file, testtarget.ReadKV(t, kv)
}

// diffJSON runs `diff --json --all` with args and returns the table.
func diffJSON(t *testing.T, args ...string) export.DiffTable {
	t.Helper()
	out, errs, code := runTickprof(t, append([]string{"diff", "--json", "--all", "--confidence", "99.9%"}, args...)...)
	if code != 0 {
		t.Fatalf("diff %v exited %d: %s", args, code, errs)
	}
	var tab export.DiffTable
	if err := json.Unmarshal([]byte(out), &tab); err != nil {
		t.Fatalf("diff --json: %v\n%s", err, out)
	}
	return tab
}

func diffRow(t *testing.T, tab export.DiffTable, fn string) export.DiffRow {
	t.Helper()
	for _, r := range tab.Rows {
		if r.Name == fn {
			return r
		}
	}
	t.Fatalf("no row for %s in the %s diff", fn, tab.Kind)
	return export.DiffRow{}
}

// TestDiffOffCPU compares two `sample --off-cpu` profiles of the offcpu
// target, the new one computing 7 ms after each byte instead of 1 (so
// blocked in read about 3 ms of every 10 instead of 9; on a loaded
// machine, where computing took twice as long, the 3 and 6 ms first tried
// hardly blocked either time): by default diff
// compares off-CPU time (the profiles' default sample type), and the
// interval of wait_byte's change holds the change the worker measured
// itself (99.9%: a calibrated interval fails this one run in a thousand;
// read's few microseconds on CPU each call are far inside its width) and
// excludes zero; --sample-type wall shows spin's wall time grown as well,
// --sample-type samples the CPU shares; a profile without off-CPU time is
// refused for off_cpu, and an unknown type with a one-line error.
func TestDiffOffCPU(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "sample/offcpu.c", "offcpu", "-fno-omit-frame-pointer", "-fno-inline", "-pthread")
	dir := t.TempDir()
	base, bkv := sampleOffCPU(t, bin, dir, "base", 1000)
	newf, nkv := sampleOffCPU(t, bin, dir, "new", 7000)

	tab := diffJSON(t, base, newf)
	r := diffRow(t, tab, "wait_byte")
	truth := nkv["blocked_ns"] - bkv["blocked_ns"]
	t.Logf("off_cpu: wait_byte %.4g -> %.4g ns, change %.4g [%.4g, %.4g] (%s); the worker's own change %.4g (%.4g -> %.4g); in all %+v",
		r.Base, r.New, r.Change.Diff, r.Change.Low, r.Change.High, r.Change.Method, truth, bkv["blocked_ns"], nkv["blocked_ns"], tab.Total)
	if tab.Kind != export.OffCPUType || tab.Total == nil {
		t.Errorf("default comparison of two off-CPU profiles: kind %q, total %v", tab.Kind, tab.Total)
	}
	if truth < r.Change.Low || truth > r.Change.High {
		t.Errorf("wait_byte's change %.4g [%.4g, %.4g] ns does not hold the worker's own %.4g", r.Change.Diff, r.Change.Low, r.Change.High, truth)
	}
	if !r.Change.Significant || r.Change.High >= 0 {
		t.Errorf("wait_byte's drop in blocked time is not significant: %+v", r.Change)
	}

	wall := diffJSON(t, "--sample-type", "wall", base, newf)
	spin := diffRow(t, wall, "spin")
	t.Logf("wall: spin %.4g -> %.4g ns, change %.4g [%.4g, %.4g]; the worker's own %.4g -> %.4g",
		spin.Base, spin.New, spin.Change.Diff, spin.Change.Low, spin.Change.High, bkv["compute_ns"], nkv["compute_ns"])
	if wall.Kind != export.WallType || !spin.Change.Significant || spin.Change.Low <= 0 {
		t.Errorf("--sample-type wall: kind %q, spin's change %+v: want a significant rise", wall.Kind, spin.Change)
	}
	if cpu := diffJSON(t, "--sample-type", "samples", base, newf); cpu.Kind != "cpu" || cpu.BaseSamples == 0 {
		t.Errorf("--sample-type samples: kind %q, %d base samples", cpu.Kind, cpu.BaseSamples)
	}

	plain := filepath.Join(dir, "runtime.pb.gz")
	writeRuntimeProfile(t, plain)
	for _, tc := range []struct{ args []string }{
		{[]string{"diff", "--sample-type", "off_cpu", plain, newf}},
		{[]string{"diff", "--sample-type", "offcpu", base, newf}},
	} {
		_, errs, code := runTickprof(t, tc.args...)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, want an error on one line: %q", tc.args, code, errs)
		}
		t.Logf("%v: %s", tc.args[1:3], strings.TrimSpace(errs))
	}
}
