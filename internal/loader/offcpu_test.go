// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// goRuntimeSrc has C functions under the Go runtime's names: all three
// the goroutine probes need, or (with -DNOPARK) all but runtime.gopark.
const goRuntimeSrc = `void execute(void) __asm__("runtime.execute");
void ready(void) __asm__("runtime.ready");
void execute(void) {}
void ready(void) {}
#ifndef NOPARK
void gopark(void) __asm__("runtime.gopark");
void gopark(void) {}
#endif
int main(void) { return 0; }
`

// TestAttachGoAllOrNone: the goroutine probes go on an executable all
// three or none (an execute probe without the park probe would end
// intervals that never began): attaching to one without runtime.gopark
// fails and leaves no probe; one with all three gets them.
func TestAttachGoAllOrNone(t *testing.T) {
	bpftest.Require(t)
	testtarget.NeedGCC(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "rt.c")
	os.WriteFile(src, []byte(goRuntimeSrc), 0o644)
	bins := map[bool]string{}
	for _, park := range []bool{false, true} {
		bin, args := filepath.Join(dir, "nopark"), []string{"-DNOPARK"}
		if park {
			bin, args = filepath.Join(dir, "park"), nil
		}
		if out, err := exec.Command("gcc", append(args, "-O0", "-o", bin, src)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		bins[park] = bin
	}
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
