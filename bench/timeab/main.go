// SPDX-License-Identifier: Apache-2.0

// Command timeab compares tickprof builds on `time`'s own cost, as
// bench/cost measures it: `tickprof time -u bench_fn -p PID --duration
// Ns` on bench/target.c built -O0, every build (and, with -bpftrace,
// bpftrace's uprobe+uretprobe pair on the same function) once a round on
// the same running target, the order reversed every other round. For
// each tool it prints the median and range of the time from start to the
// first line once the probes are on ("tickprof: timing ...", bpftrace's
// "Attaching ..."), of the CPU of the whole run (user + system, wait4)
// and of the peak RSS; for each build after the first, the median and
// range of its ratios to the first in the same round; and the 1-minute
// load average at each round's start.
//
//	go run ./bench/timeab -rounds 8 -bpftrace OLD_BINARY NEW_BINARY
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tickprof/tickprof/internal/cbuild"
)

// run is one tool's figures in one round.
type run struct{ first, cpu, rss float64 }

func main() {
	rounds := flag.Int("rounds", 6, "interleaved rounds")
	secs := flag.Int("secs", 5, "length of each run, in seconds")
	withBpftrace := flag.Bool("bpftrace", false, "also run bpftrace's uprobe+uretprobe pair")
	flag.Parse()
	log.SetFlags(0)
	if flag.NArg() == 0 {
		log.Fatal("usage: timeab [-rounds N] [-secs N] [-bpftrace] TICKPROF_BINARY...")
	}
	dir, err := os.MkdirTemp("", "tickprof-timeab")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "target")
	if err := cbuild.Build(bin, cbuild.Program{Sources: []string{"bench/target.c"}, Flags: []string{"-O0", "-fno-omit-frame-pointer"}}); err != nil {
		log.Fatal(err)
	}
	tgt := exec.Command(bin, "call", "4000000000")
	if err := tgt.Start(); err != nil {
		log.Fatal(err)
	}
	defer tgt.Process.Kill()
	time.Sleep(500 * time.Millisecond)
	tools := slices.Clone(flag.Args())
	if *withBpftrace {
		tools = append(tools, "bpftrace")
	}
	data, loads := runRounds(tools, *rounds, func(tool string) []string { return argv(tool, bin, tgt.Process.Pid, *secs) })
	report(tools, data, loads, flag.NArg())
}

// runRounds runs every tool once a round, the order reversed in odd rounds.
func runRounds(tools []string, rounds int, argv func(string) []string) (map[string][]run, []string) {
	data := map[string][]run{}
	var loads []string
	for r := range rounds {
		loads = append(loads, loadavg())
		order := slices.Clone(tools)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			x := measure(argv(t))
			data[t] = append(data[t], x)
			fmt.Fprintf(os.Stderr, "round %d %s: first %.3f s, CPU %.3f s\n", r+1, t, x.first, x.cpu)
		}
	}
	return data, loads
}

// argv is the command line of a tool timing bench_fn in process pid.
func argv(tool, bin string, pid, secs int) []string {
	if tool == "bpftrace" {
		prog := fmt.Sprintf("uprobe:%s:bench_fn /pid == %d/ { @s[tid] = nsecs; } uretprobe:%s:bench_fn /@s[tid]/ { @ns = hist(nsecs - @s[tid]); delete(@s[tid]); } interval:s:%d { exit(); }", bin, pid, bin, secs)
		return []string{"bpftrace", "-e", prog}
	}
	return []string{tool, "time", "-u", "bench_fn", "-p", fmt.Sprint(pid), "--duration", fmt.Sprintf("%ds", secs)}
}

var ready = regexp.MustCompile(`^(tickprof: timing |Attaching )`)

// measure runs argv to its end: the time to its first line once the
// probes are on, its CPU (s) and peak RSS (MiB) from wait4.
func measure(argv []string) run {
	cmd := exec.Command(argv[0], argv[1:]...)
	pr, pw, err := os.Pipe()
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatalf("start %s: %v", argv[0], err)
	}
	pw.Close()
	var x run
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if x.first == 0 && ready.MatchString(sc.Text()) {
			x.first = time.Since(start).Seconds()
		}
	}
	if err := cmd.Wait(); err != nil {
		log.Printf("%s: %v", argv[0], err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	x.cpu = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	x.rss = float64(ru.Maxrss) / 1024
	return x
}

// report prints each tool's medians and ranges, each build's ratios to
// the first build in the same rounds, and, with bpftrace, each build's
// ratios to it.
func report(tools []string, data map[string][]run, loads []string, builds int) {
	fmt.Printf("1-minute load at each round's start: %s\n", strings.Join(loads, ", "))
	for _, t := range tools {
		fmt.Printf("%s: first %s s, CPU %s s, peak RSS %s MiB\n", t,
			stat(data[t], func(x run) float64 { return x.first }),
			stat(data[t], func(x run) float64 { return x.cpu }),
			stat(data[t], func(x run) float64 { return x.rss }))
	}
	for _, t := range tools[1:builds] {
		printRatios(t, tools[0], data)
	}
	if len(tools) > builds {
		for _, t := range tools[:builds] {
			printRatios(t, "bpftrace", data)
		}
	}
}

// printRatios prints a over b's first-output time and CPU, round by round.
func printRatios(a, b string, data map[string][]run) {
	ratio := func(f func(run) float64) string {
		rs := make([]run, len(data[b]))
		for i := range rs {
			rs[i].first = f(data[a][i]) / f(data[b][i])
		}
		return stat(rs, func(x run) float64 { return x.first })
	}
	fmt.Printf("%s over %s, same rounds: first %s, CPU %s\n", a, b,
		ratio(func(x run) float64 { return x.first }), ratio(func(x run) float64 { return x.cpu }))
}

// stat is "median [min, max]" of f over xs.
func stat(xs []run, f func(run) float64) string {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return "-"
	}
	m := v[n/2]
	if n%2 == 0 {
		m = (v[n/2-1] + v[n/2]) / 2
	}
	return fmt.Sprintf("%.3g [%.3g, %.3g]", m, v[0], v[n-1])
}

// loadavg is the 1-minute load average.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
