// SPDX-License-Identifier: Apache-2.0

// Command heap runs the agent in-process on given processes for a while
// and writes its heap profile (live objects after a collection), so that
// where the agent's memory goes can be read with `go tool pprof -top`:
//
//	go run ./bench/agent/heap -p PID[,PID...] -d 60s -o heap.pb.gz
//
// It prints the Go heap's size and the process's RSS beside it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/tickprof/tickprof/agent"
)

func main() {
	pids := flag.String("p", "", "processes to watch, comma-separated")
	exe := flag.String("exe", "", "or an executable to watch")
	d := flag.Duration("d", 60*time.Second, "how long to run")
	out := flag.String("o", "heap.pb.gz", "heap profile to write")
	hz := flag.Int("F", agent.DefaultFrequency, "sampling rate")
	user := flag.String("u", "", "a function to time in each process, as PATH:FUNCTION")
	flag.Parse()
	if err := run(*pids, *exe, *user, *d, *out, *hz); err != nil {
		fmt.Fprintln(os.Stderr, "heap:", err)
		os.Exit(1)
	}
}

func run(pids, exe, user string, d time.Duration, out string, hz int) error {
	dir, err := os.MkdirTemp("", "tickprof-heap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := agent.Config{Frequency: hz, Window: 10 * time.Second, Destinations: agent.Destinations{Dir: dir}}
	if exe != "" {
		cfg.Exes = []string{exe}
	}
	if user != "" {
		cfg.Users = []string{user}
	}
	for _, p := range strings.Split(pids, ",") {
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("-p %q: %w", p, err)
		}
		cfg.PIDs = append(cfg.PIDs, n)
	}
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	// The profile is taken while the agent runs, a little before the end.
	time.Sleep(d - 3*time.Second)
	runtime.GC()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, _ := os.ReadFile("/proc/self/status")
	var rss string
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "RssAnon") || strings.HasPrefix(l, "RssFile") || strings.HasPrefix(l, "VmHWM") {
			rss += strings.Join(strings.Fields(l), " ") + "; "
		}
	}
	fmt.Printf("heap in use %.1f MB (live objects %.1f MB), Go runtime total from the OS %.1f MB, %d GCs; %s\n",
		float64(ms.HeapInuse)/1e6, float64(ms.HeapAlloc)/1e6, float64(ms.Sys)/1e6, ms.NumGC, rss)
	return <-done
}
