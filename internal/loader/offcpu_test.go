// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestAttachGoAllOrNone: the goroutine probes go on an executable all
// three or none (an execute probe without the park probe would end
// intervals that never began): attaching to one without runtime.gopark
// fails and leaves no probe; one with all three gets them.
func TestAttachGoAllOrNone(t *testing.T) {
	bpftest.Require(t)
	// C functions under the runtime's names: all three, and all but
	// runtime.gopark.
	bins := map[bool]string{true: testtarget.C(t, "c/goruntime.c", "goruntime"), false: testtarget.C(t, "c/goruntime_nopark.c", "goruntime_nopark")}
	spec, err := bpf.LoadOffCPU()
	if err != nil {
		t.Fatal(err)
	}
	maps := map[string]*ebpf.Map{}
	for _, name := range []string{"samples", "targets"} {
		m, err := ebpf.NewMap(spec.Maps[name])
		if err != nil {
			t.Fatalf("map %s: %v", name, err)
		}
		defer m.Close()
		maps[name] = m
	}
	c, err := StartOffCPU(OffCPUOptions{Prob: 1, Targets: maps["targets"], Ring: maps["samples"]})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.AttachGo(bins[false]); err == nil {
		t.Fatal("attached to an executable without runtime.gopark")
	} else if n := len(c.goLinks); n != 0 {
		t.Fatalf("%d goroutine probes left after the failure (%v)", n, err)
	}
	preempt, err := c.AttachGo(bins[true])
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.goLinks); n != 3 || preempt == nil {
		t.Errorf("%d goroutine probes, preemption %v: want the three, and no preemption probe (no DWARF)", n, preempt)
	}
	if err := c.DetachGo(); err != nil || len(c.goLinks) != 0 {
		t.Errorf("DetachGo: %v, %d left", err, len(c.goLinks))
	}
}
