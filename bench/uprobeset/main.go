// SPDX-License-Identifier: Apache-2.0

// Command uprobeset measures attaching and detaching large sets of uprobes
// on a C target that keeps calling libc: every function of libc (-glob)
// with multi-uprobe links, and a smaller glob (-single-glob; single links
// take 0.1-0.2 s each to detach, so the whole of libc would take minutes)
// with single links, the path of kernels before 6.6. It prints, per link
// kind and repetition, the time to resolve nothing (done once), screen the
// probe sites and attach, to stop (final read) and to detach, and the
// functions skipped.
//
// Run as root from the repository root:
//
//	go run ./bench/uprobeset [-glob 'libc:*'] [-single-glob 'libc:str*'] [-reps 2]
//
// Link kinds are interleaved (multi, single, multi, single, ...), so that a
// change in machine load hits both alike.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tickprof/tickprof/internal/cbuild"
	"github.com/tickprof/tickprof/internal/loader"
)

func main() {
	glob := flag.String("glob", "libc:*", "functions to probe with multi-uprobe links")
	singleGlob := flag.String("single-glob", "libc:str*", "functions to probe with single links")
	max := flag.Int("max", 3000, "most functions")
	reps := flag.Int("reps", 2, "repetitions per link kind")
	run := flag.Duration("run", time.Second, "time attached")
	only := flag.String("only", "", "multi or single: measure one kind")
	flag.Parse()
	if err := measure(*glob, *singleGlob, *max, *reps, *run, *only); err != nil {
		fmt.Fprintln(os.Stderr, "probeset:", err)
		os.Exit(1)
	}
}

func measure(glob, singleGlob string, max, reps int, run time.Duration, only string) error {
	dir, err := os.MkdirTemp("", "probeset")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd, err := startTarget(dir)
	if err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	specs, err := loader.ResolveUser(pid, glob, max)
	if err != nil {
		return err
	}
	singleSpecs, err := loader.ResolveUser(pid, singleGlob, max)
	if err != nil {
		return err
	}
	if len(singleSpecs) > loader.MaxSingleLinks/2 {
		singleSpecs = singleSpecs[:loader.MaxSingleLinks/2]
	}
	fmt.Printf("multi: %d functions from %s; single: %d functions from %s; kernel multi-uprobe links: %v\n",
		len(specs), glob, len(singleSpecs), singleGlob, loader.HaveUprobeMulti() == nil)
	kinds := []bool{false, true}
	if only == "multi" {
		kinds = []bool{false}
	} else if only == "single" {
		kinds = []bool{true}
	}
	for r := 0; r < reps; r++ {
		for _, single := range kinds {
			sp := specs
			if single {
				sp = singleSpecs
			}
			if err := measureOnce(r, pid, sp, single, run); err != nil {
				return err
			}
		}
	}
	return nil
}

// startTarget builds testdata/c/timed.c in dir and starts it calling
// getpid, giving it 200 ms to start.
func startTarget(dir string) (*exec.Cmd, error) {
	bin := filepath.Join(dir, "timed")
	if err := cbuild.Build(bin, cbuild.Program{Sources: []string{"testdata/c/timed.c"}, Flags: []string{"-O2", "-pthread"}}); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "getpid", "0")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond)
	return cmd, nil
}

// measureOnce opens a session on the functions sp of pid (single or
// multi-uprobe links), lets it run, and prints how long opening, stopping
// and detaching took; repetition r is the first when 0.
func measureOnce(r, pid int, sp []loader.Spec, single bool, run time.Duration) error {
	t0 := time.Now()
	s, err := loader.OpenContext(context.Background(), loader.Options{
		Clock: loader.Clock{Kind: loader.ClockNS}, PID: pid, SingleLinks: single, NoRecords: true,
	}, sp)
	if err != nil {
		return err
	}
	open := time.Since(t0)
	time.Sleep(run)
	t1 := time.Now()
	s.Stop()
	p, _ := s.Poll()
	stop := time.Since(t1)
	t2 := time.Now()
	s.Detach(context.Background())
	detach := time.Since(t2)
	s.Close()
	var calls uint64
	for _, c := range p.Totals {
		calls += c.Calls
	}
	n := 2 * len(s.Targets())
	fmt.Printf("rep %d %-6s probes %4d (skipped %d): open+screen+attach %6.2fs  stop %5.3fs  detach %6.2fs (%5.1f ms a probe)  calls %d\n",
		r, s.LinkKind(), n, len(s.Skipped()), open.Seconds(), stop.Seconds(), detach.Seconds(), 1000*detach.Seconds()/float64(n), calls)
	if r == 0 && len(s.Skipped()) > 0 {
		fmt.Println("  skipped:", loader.FormatSkipped(s.Skipped(), 8))
	}
	return nil
}
