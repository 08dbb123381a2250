// SPDX-License-Identifier: Apache-2.0

package features

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
)

// TestProbeFeaturesMatchesKernel checks each probe against independent
// evidence of what the kernel has: its config (when readable) and the files
// tracefs exposes. It holds on the host (no kprobes, no fentry) and in the
// matrix guests (both), which differ.
func TestProbeFeaturesMatchesKernel(t *testing.T) {
	bpftest.Require(t)
	f, err := ProbeFeatures()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Results {
		t.Logf("%-28s %-5v %s", r.ID, r.OK, r.Detail)
	}
	tfs, err := EnsureTracefs()
	if err != nil {
		t.Fatalf("tracefs: %v", err)
	}
	for _, id := range []FeatureID{FeatPrivileges, FeatBTF, FeatTracefs, FeatRawTP, FeatRingBuf, FeatJiffies64, FeatKtimeGetNs, FeatTickPeriod} {
		if !f.Has(id) {
			t.Errorf("%s: want ok on every kernel tickprof supports, got %q", id, f.Get(id).Detail)
		}
	}

	// kprobes: a kprobe PMU or kprobe_events file exists exactly when the
	// kernel has CONFIG_KPROBES (and kprobe events).
	wantKprobe := pathExists("/sys/bus/event_source/devices/kprobe") || pathExists(filepath.Join(tfs, "kprobe_events"))
	if f.ConfigSource != "" && (f.KernelConfig["CONFIG_KPROBES"] == "y") != wantKprobe {
		t.Errorf("kernel config %s says CONFIG_KPROBES=%q but kprobe PMU/kprobe_events present=%v",
			f.ConfigSource, f.KernelConfig["CONFIG_KPROBES"], wantKprobe)
	}
	for _, id := range []FeatureID{FeatKprobe, FeatKretprobe} {
		if f.Has(id) != wantKprobe {
			t.Errorf("%s = %v, but kprobe PMU/kprobe_events present = %v (%s)", id, f.Has(id), wantKprobe, f.Get(id).Detail)
		}
	}

	// uprobes: the uprobe PMU or uprobe_events.
	wantUprobe := pathExists("/sys/bus/event_source/devices/uprobe") || pathExists(filepath.Join(tfs, "uprobe_events"))
	for _, id := range []FeatureID{FeatUprobe, FeatUretprobe} {
		if f.Has(id) != wantUprobe {
			t.Errorf("%s = %v, but uprobe PMU/uprobe_events present = %v (%s)", id, f.Has(id), wantUprobe, f.Get(id).Detail)
		}
	}

	// fentry: BPF trampolines need BTF and ftrace direct calls on a
	// function ftrace can patch; where ftrace's function list is not even
	// readable (the host), trampolines cannot attach either.
	filterFuncs := filepath.Join(tfs, "available_filter_functions")
	ftraceOK := fileReadable(filterFuncs, nil) == nil
	wantFentry := ftraceOK && f.Has(FeatBTF)
	if f.ConfigSource != "" {
		wantFentry = wantFentry && f.KernelConfig["CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS"] == "y"
	}
	for _, id := range []FeatureID{FeatFentry, FeatFexit} {
		if f.Has(id) != wantFentry {
			t.Errorf("%s = %v, want %v (ftrace function list readable=%v, config %v) : %s",
				id, f.Has(id), wantFentry, ftraceOK, f.KernelConfig["CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS"], f.Get(id).Detail)
		}
	}
	if f.Has(FeatFilterFuncs) != ftraceOK {
		t.Errorf("%s = %v, want %v", FeatFilterFuncs, f.Has(FeatFilterFuncs), ftraceOK)
	}

	// syscall tracepoints: tracefs lists the syscalls event group.
	wantSysTP := pathExists(filepath.Join(tfs, "events/syscalls/sys_enter_getppid"))
	if f.Has(FeatSyscallTP) != wantSysTP {
		t.Errorf("%s = %v, but events/syscalls/sys_enter_getppid present = %v", FeatSyscallTP, f.Has(FeatSyscallTP), wantSysTP)
	}

	// The measured tick period is 1/CONFIG_HZ when the config says. It is
	// measured against the monotonic clock, which under full emulation
	// (the kernel matrix) drifts from the timer interrupts by a few percent.
	if hz := f.KernelConfig["CONFIG_HZ"]; hz != "" {
		var n float64
		for _, c := range hz {
			n = n*10 + float64(c-'0')
		}
		want := time.Duration(float64(time.Second) / n)
		if rel := math.Abs(float64(f.TickPeriod-want)) / float64(want); rel > 0.10 {
			t.Errorf("tick period %v, CONFIG_HZ=%s says %v", f.TickPeriod, hz, want)
		}
	}

	// The method chosen for kernel functions follows the probes.
	m, err := f.KernelFuncMethod(AttachAuto)
	switch {
	case wantKprobe && m != AttachKprobe:
		t.Errorf("auto method = %q (%v), want kprobe", m, err)
	case !wantKprobe && wantFentry && m != AttachFentry:
		t.Errorf("auto method = %q (%v), want fentry", m, err)
	case !wantKprobe && !wantFentry && err == nil:
		t.Errorf("auto method = %q, want an error naming the missing options", m)
	}
	if err != nil {
		t.Logf("kernel functions: %v", err)
	}
	if os.Getenv("TICKPROF_IN_MATRIX") == "1" && (!wantKprobe || !wantFentry) {
		t.Errorf("matrix kernels must have kprobes and fentry: kprobe=%v fentry=%v", wantKprobe, wantFentry)
	}
}

func TestParseAttachMode(t *testing.T) {
	for _, s := range []string{"auto", "kprobe", "fentry"} {
		if m, err := ParseAttachMode(s); err != nil || string(m) != s {
			t.Errorf("ParseAttachMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseAttachMode("fexit"); err == nil {
		t.Error("ParseAttachMode(fexit) accepted")
	}
}

func TestKernelFuncMethodNamesMissingOptions(t *testing.T) {
	f := &Features{
		Kernel:       "test",
		KernelConfig: map[string]string{"CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS": "y"},
		ConfigSource: "/proc/config.gz",
		Results: []FeatureResult{
			{ID: FeatKprobe, Detail: "no kprobe PMU"},
			{ID: FeatKretprobe, Detail: "no kprobe PMU"},
			{ID: FeatFentry, Detail: "operation not permitted"},
			{ID: FeatFexit, Detail: "operation not permitted"},
		},
	}
	_, err := f.KernelFuncMethod(AttachAuto)
	if err == nil {
		t.Fatal("no error without kprobes and fentry")
	}
	for _, want := range []string{"CONFIG_KPROBES is not set", "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS=y", "operation not permitted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	f.Results[2].OK, f.Results[3].OK = true, true
	if m, err := f.KernelFuncMethod(AttachAuto); err != nil || m != AttachFentry {
		t.Errorf("with fentry only: %q, %v; want fentry", m, err)
	}
	if _, err := f.KernelFuncMethod(AttachKprobe); err == nil {
		t.Error("--attach kprobe accepted without kprobes")
	}
}
