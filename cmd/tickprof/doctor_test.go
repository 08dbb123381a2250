// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/features"
)

// TestDoctor runs `tickprof doctor --json` and `tickprof doctor` and checks
// that the methods follow the probed capabilities. (That the probes match
// the kernel is loader's TestProbeFeaturesMatchesKernel, run on the host
// and in every matrix guest.)
func TestDoctor(t *testing.T) {
	bpftest.Require(t)
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"doctor", "--json"})
	root.SetOut(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Kernel   string `json:"kernel"`
		Features []struct {
			ID     string `json:"id"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"features"`
		TickPeriodNs int64 `json:"tick_period_ns"`
		Methods      []struct {
			Kind   string `json:"kind"`
			Method string `json:"method"`
			Error  string `json:"error"`
		} `json:"methods"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("doctor --json output is not JSON: %v\n%s", err, out.String())
	}
	ok := map[string]bool{}
	for _, f := range rep.Features {
		ok[f.ID] = f.OK
	}
	for _, id := range []features.FeatureID{features.FeatBTF, features.FeatUprobe, features.FeatKprobe, features.FeatFentry,
		features.FeatSyscallTP, features.FeatRawTP, features.FeatPerfEvent, features.FeatRingBuf, features.FeatCookie,
		features.FeatTaskStorage, features.FeatJiffies64, features.FeatTickPeriod} {
		if _, found := ok[string(id)]; !found {
			t.Errorf("doctor --json lacks %s", id)
		}
	}
	if rep.TickPeriodNs < 1e6 || rep.TickPeriodNs > 10.5e6 {
		t.Errorf("tick period %d ns: want 1-10 ms (CONFIG_HZ 100..1000)", rep.TickPeriodNs)
	}
	if len(rep.Methods) != 4 {
		t.Fatalf("methods: %+v, want 4 target kinds", rep.Methods)
	}
	k := rep.Methods[2]
	switch {
	case ok["kprobe"] && ok["kretprobe"]:
		if !strings.HasPrefix(k.Method, "kprobe") {
			t.Errorf("kernel functions: %+v, want kprobe", k)
		}
	case ok["fentry"] && ok["fexit"]:
		if !strings.HasPrefix(k.Method, "fentry") {
			t.Errorf("kernel functions: %+v, want fentry", k)
		}
	default:
		if k.Error == "" || !strings.Contains(k.Error, "CONFIG_KPROBES") {
			t.Errorf("kernel functions: %+v, want an error naming CONFIG_KPROBES", k)
		}
	}
	if s := rep.Methods[1]; ok["raw_tracepoints"] && !strings.HasPrefix(s.Method, "raw tracepoint") {
		t.Errorf("syscalls: %+v, want the raw tracepoint method", s)
	}

	out.Reset()
	root = newRootCmd()
	root.SetArgs([]string{"doctor"})
	root.SetOut(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CAPABILITY", "kprobe", "fentry", "tick_period", "TARGET KIND", "kernel function (-k)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out.String())
		}
	}
}
