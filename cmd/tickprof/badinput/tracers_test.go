// SPDX-License-Identifier: Apache-2.0

package badinput

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestWarnsOfOtherTracer: two `tickprof time` runs on one function of one
// process at once (each measures the other's probe as part of every call,
// and reports about twice the mean) both warn that another tracer probes
// it; one run alone does not.
func TestWarnsOfOtherTracer(t *testing.T) {
	bpftest.Require(t)
	target := exec.Command(testtarget.Timed(t), "spin1us", "0") // calls tp_spin1us forever
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	pid := strconv.Itoa(target.Process.Pid)
	run := func(n int) []string {
		outs := make([]string, n)
		var wg sync.WaitGroup
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				c := exec.CommandContext(ctx, bin, "time", "-u", "tp_spin1us", "-p", pid, "--duration", "4s", "--no-correct")
				c.Dir = work
				b, _ := c.CombinedOutput()
				outs[i] = string(b)
			}()
		}
		wg.Wait()
		return outs
	}
	const warning = "another tracer also probes tp_spin1us"
	if out := run(1)[0]; strings.Contains(out, warning) {
		t.Errorf("a run alone warned:\n%s", out)
	}
	for i, out := range run(2) {
		if !strings.Contains(out, warning) {
			t.Errorf("run %d of 2 at once does not warn of the other:\n%s", i, out)
		}
	}
}
