// SPDX-License-Identifier: Apache-2.0

// Command cost measures what tickprof costs the machine beside perf and
// bpftrace, in rounds that interleave the tools (A B, then B A), and
// writes the table between the bench-cost markers of docs/performance.md
// (make bench-cost). Per round:
//
//   - sample: `tickprof sample -F 999` and `perf record -F 999 -g` on the
//     same running target for the same span, one after the other: peak RSS
//     and CPU (user + system) of the profiler process, from the kernel's
//     accounting (wait4), on four targets: a C program with frame pointers,
//     a frameless C program using libc, a Go program and a Python 3.11
//     interpreter; and tickprof's own report of its cost against the
//     kernel's figure.
//   - time: `tickprof time -u bench_fn` and bpftrace's uprobe+uretprobe
//     pair on the same function: time from start to the first line the tool
//     prints once its probes are on (tickprof's "timing ..." line,
//     bpftrace's "Attaching ..."), and the CPU of the whole run.
//
// Ratios are tickprof over the peer in the same round; the table gives
// each ratio's median and range over the rounds, with the load average
// seen during the run. Needs root, gcc, perf, bpftrace and python3.11.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tickprof/tickprof/bench/benchkit"
	"github.com/tickprof/tickprof/internal/cbuild"
)

func main() {
	tp := flag.String("tickprof", "bin/tickprof", "tickprof binary")
	rounds := flag.Int("rounds", 10, "interleaved rounds")
	secs := flag.Int("secs", 5, "length of each sampling and timing run, in seconds")
	doc := flag.String("doc", "docs/performance.md", "document whose bench-cost section is rewritten (\"\": print only)")
	raw := flag.String("raw", "bench/results/cost.tsv", "file for every run's figures")
	flag.Parse()
	log.SetFlags(0)
	tmp, err := os.MkdirTemp("", "tickprof-cost")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	targets, fn, err := buildTargets(tmp)
	if err != nil {
		log.Fatal(err)
	}
	b := &bench{tp: *tp, secs: *secs, tmp: tmp, targets: targets, fnTarget: fn}
	for r := range *rounds {
		b.round(r)
		fmt.Fprintf(os.Stderr, "round %d/%d done, load %s\n", r+1, *rounds, loadavg())
	}
	table := b.table(*rounds)
	fmt.Print(table)
	if *raw != "" {
		if err := os.WriteFile(*raw, []byte(b.rawTSV()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *doc != "" {
		if err := replaceSection(*doc, table); err != nil {
			log.Fatal(err)
		}
	}
}

// target is a program to sample: argv with "SECS" replaced by its run
// length.
type target struct {
	name string
	argv []string
}

// buildTargets compiles the C targets and the Go one; the function target
// is bench/target.c's bench_fn.
func buildTargets(dir string) ([]target, []string, error) {
	fp := filepath.Join(dir, "burn")
	if err := cbuild.Build(fp, cbuild.Program{Sources: []string{"testdata/sample/burn.c"}, Flags: []string{"-O1", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-fno-inline"}}); err != nil {
		return nil, nil, err
	}
	fl := filepath.Join(dir, "frameless")
	if err := cbuild.Build(fl, cbuild.Program{Sources: []string{"testdata/sample/frameless.c"}, Flags: []string{"-O2", "-fomit-frame-pointer", "-fasynchronous-unwind-tables", "-pthread"}}); err != nil {
		return nil, nil, err
	}
	gobin := filepath.Join(dir, "gocpu")
	if out, err := exec.Command("go", "build", "-o", gobin, "./testdata/sample/gocpu").CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("build gocpu: %v: %s", err, out)
	}
	fn := filepath.Join(dir, "target")
	if err := cbuild.Build(fn, cbuild.Program{Sources: []string{"bench/target.c"}, Flags: []string{"-O0", "-fno-omit-frame-pointer"}}); err != nil {
		return nil, nil, err
	}
	py := "/usr/bin/python3.11"
	return []target{
		{"C, frame pointers", []string{fp, "SECS"}},
		{"C, frameless, libc", []string{fl, "SECS"}},
		{"Go", []string{gobin, "100", "SECS", os.DevNull}},
		{"Python 3.11", []string{py, "-c", "import time\nend=time.time()+SECS\nx=0\nwhile time.time()<end:\n  for i in range(10000): x=(x*31+i)%1000003\n"}},
	}, []string{fn, "call", "4000000000"}, nil
}

// run is one tool's figures in one round.
type run struct {
	round       int
	row, tool   string
	cpu         time.Duration // user + system, kernel's accounting
	rss         int64         // peak RSS, bytes
	reportedCPU time.Duration // what tickprof said it cost (0: not said)
	first       time.Duration // start to the first line after attaching
	failed      bool          // the tool failed: left out
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

type bench struct {
	tp       string
	secs     int
	tmp      string
	targets  []target
	fnTarget []string
	runs     []run
	loads    []string
}

// round measures every row once, tickprof first in even rounds.
func (b *bench) round(r int) {
	b.loads = append(b.loads, loadavg())
	for _, t := range b.targets {
		order := []string{"tickprof", "perf"}
		if r%2 == 1 {
			order = []string{"perf", "tickprof"}
		}
		argv := make([]string, len(t.argv))
		for i, a := range t.argv {
			argv[i] = strings.ReplaceAll(a, "SECS", strconv.Itoa(2*b.secs+6))
		}
		tgt := exec.Command(argv[0], argv[1:]...)
		tgt.Stdout, tgt.Stderr = io.Discard, io.Discard
		if err := tgt.Start(); err != nil {
			log.Fatalf("start %s: %v", t.name, err)
		}
		time.Sleep(time.Second)
		pid := strconv.Itoa(tgt.Process.Pid)
		for _, tool := range order {
			var cmd []string
			if tool == "tickprof" {
				cmd = []string{b.tp, "sample", "-F", "999", "-p", pid, "--duration", fmt.Sprintf("%ds", b.secs), "-o", filepath.Join(b.tmp, "s.pb.gz")}
			} else {
				cmd = []string{"perf", "record", "-q", "-F", "999", "-g", "-p", pid, "-o", filepath.Join(b.tmp, "perf.data"), "--", "sleep", strconv.Itoa(b.secs)}
			}
			x := measure(cmd, nil)
			x.round, x.row, x.tool = r, "sample: "+t.name, tool
			b.runs = append(b.runs, x)
		}
		tgt.Process.Kill()
		tgt.Wait()
	}
	b.timeRow(r)
}

// timeRow times bench_fn with tickprof and with bpftrace.
func (b *bench) timeRow(r int) {
	tgt := exec.Command(b.fnTarget[0], b.fnTarget[1:]...)
	tgt.Stdout, tgt.Stderr = io.Discard, io.Discard
	if err := tgt.Start(); err != nil {
		log.Fatalf("start the function target: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	pid := strconv.Itoa(tgt.Process.Pid)
	order := []string{"tickprof", "bpftrace"}
	if r%2 == 1 {
		order = []string{"bpftrace", "tickprof"}
	}
	bin := b.fnTarget[0]
	for _, tool := range order {
		var cmd []string
		var ready *regexp.Regexp
		if tool == "tickprof" {
			cmd = []string{b.tp, "time", "-u", "bench_fn", "-p", pid, "--duration", fmt.Sprintf("%ds", b.secs)}
			ready = regexp.MustCompile(`^tickprof: timing `)
		} else {
			prog := fmt.Sprintf("uprobe:%s:bench_fn /pid == %s/ { @s[tid] = nsecs; } uretprobe:%s:bench_fn /@s[tid]/ { @ns = hist(nsecs - @s[tid]); delete(@s[tid]); } interval:s:%d { exit(); }", bin, pid, bin, b.secs)
			cmd = []string{"bpftrace", "-e", prog}
			ready = regexp.MustCompile(`^Attaching `)
		}
		x := measure(cmd, ready)
		x.round, x.row, x.tool = r, "time: one C function", tool
		b.runs = append(b.runs, x)
	}
	tgt.Process.Kill()
	tgt.Wait()
}

// measure runs argv to its end and returns its CPU and peak RSS from
// wait4, the cost it reported of itself (a tickprof "own cost: CPU X"
// line), and, with ready, how long it took to print a line matching it.
func measure(argv []string, ready *regexp.Regexp) run {
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
	var out bytes.Buffer
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if ready != nil && x.first == 0 && ready.MatchString(line) {
			x.first = time.Since(start)
		}
		if d, ok := reportedCPU(line); ok {
			x.reportedCPU = d
		}
	}
	if err := cmd.Wait(); err != nil {
		// Another process on a shared machine may end a tool (a perf
		// killed by a pkill): the run is left out of the round, said here.
		log.Printf("left out: %s: %v\n%s", strings.Join(argv, " "), err, lastLines(out.String(), 3))
		x.failed = true
		return x
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	x.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	x.rss = ru.Maxrss << 10
	return x
}

var ownCost = regexp.MustCompile(`own cost: CPU ([0-9.]+) (s|ms|µs)`)

// reportedCPU reads the CPU figure of a tickprof "own cost" line.
func reportedCPU(line string) (time.Duration, bool) {
	m := ownCost.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	unit := map[string]float64{"s": 1e9, "ms": 1e6, "µs": 1e3}[m[2]]
	return time.Duration(v * unit), true
}

// loadavg is the 1-minute load average.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// ratios are tickprof's figure over the peer's, per round, for a row.
func (b *bench) ratios(row string, f func(run) float64) (tick, peer []float64, rs []float64) {
	by := map[int]map[string]run{}
	for _, x := range b.runs {
		if x.row != row || x.failed {
			continue
		}
		if by[x.round] == nil {
			by[x.round] = map[string]run{}
		}
		by[x.round][x.tool] = x
	}
	for _, m := range by {
		t, ok := m["tickprof"]
		if !ok {
			continue
		}
		for tool, p := range m {
			if tool == "tickprof" {
				continue
			}
			tick, peer = append(tick, f(t)), append(peer, f(p))
			if f(p) > 0 {
				rs = append(rs, f(t)/f(p))
			}
		}
	}
	return tick, peer, rs
}

// medianRange formats a median with its range (benchkit.MedRange), "—"
// for no values.
func medianRange(v []float64, scale float64, format string) string {
	if len(v) == 0 {
		return "—"
	}
	s := make([]float64, len(v))
	for i, x := range v {
		s[i] = x / scale
	}
	return benchkit.MedRange(s, format)
}

const (
	mib   = "%.0f MiB"
	secs  = "%.3g s"
	ratio = "%.2fx"
)

// table is the Markdown section: rows by measure, with medians and ranges.
func (b *bench) table(rounds int) string {
	var w strings.Builder
	fmt.Fprintf(&w, "### Own cost beside perf and bpftrace (`make bench-cost`, %s)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&w, "%d interleaved rounds of %d s runs on %d CPUs; 1-minute load average at each round's start: %s. "+
		"Figures are the profiler process's own, from the kernel's accounting (wait4): peak RSS, and CPU as user + system. "+
		"Each cell is the median over the rounds with the range; ratios are tickprof over the peer in the same round.\n\n",
		rounds, b.secs, runtime.NumCPU(), strings.Join(b.loads, ", "))
	fmt.Fprintf(&w, "| measure | tickprof | peer | ratio |\n|---|---|---|---|\n")
	rows := []string{}
	seen := map[string]bool{}
	for _, x := range b.runs {
		if !seen[x.row] {
			seen[x.row] = true
			rows = append(rows, x.row)
		}
	}
	for _, row := range rows {
		peer := "perf record -g"
		if strings.HasPrefix(row, "time") {
			peer = "bpftrace"
		}
		if strings.HasPrefix(row, "sample") {
			t, p, r := b.ratios(row, func(x run) float64 { return float64(x.rss) })
			fmt.Fprintf(&w, "| %s -F 999, peak RSS (vs %s) | %s | %s | %s |\n", row, peer, medianRange(t, 1<<20, mib), medianRange(p, 1<<20, mib), medianRange(r, 1, ratio))
		} else {
			t, p, r := b.ratios(row, func(x run) float64 { return float64(x.first) })
			fmt.Fprintf(&w, "| %s, start to first output (vs %s) | %s | %s | %s |\n", row, peer, medianRange(t, 1e9, secs), medianRange(p, 1e9, secs), medianRange(r, 1, ratio))
		}
		t, p, r := b.ratios(row, func(x run) float64 { return float64(x.cpu) })
		fmt.Fprintf(&w, "| %s, own CPU (vs %s) | %s | %s | %s |\n", row, peer, medianRange(t, 1e9, secs), medianRange(p, 1e9, secs), medianRange(r, 1, ratio))
	}
	var rep []float64
	for _, x := range b.runs {
		if x.tool == "tickprof" && x.reportedCPU > 0 && x.cpu > 0 {
			rep = append(rep, float64(x.reportedCPU)/float64(x.cpu))
		}
	}
	fmt.Fprintf(&w, "\ntickprof's reported own CPU over the kernel's figure for the same process, every tickprof run: %s.\n",
		medianRange(rep, 1, ratio))
	return w.String()
}

// rawTSV is every run, one line each.
func (b *bench) rawTSV() string {
	var w strings.Builder
	fmt.Fprintln(&w, "round\trow\ttool\tcpu_ns\tpeak_rss_bytes\treported_cpu_ns\tfirst_output_ns")
	for _, x := range b.runs {
		fmt.Fprintf(&w, "%d\t%s\t%s\t%d\t%d\t%d\t%d\n", x.round, x.row, x.tool, x.cpu, x.rss, x.reportedCPU, x.first)
	}
	return w.String()
}

const (
	beginMark = "<!-- bench-cost:begin -->"
	endMark   = "<!-- bench-cost:end -->"
)

// replaceSection puts table between the markers of the document.
func replaceSection(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, beginMark, endMark)
	}
	s = s[:i+len(beginMark)] + "\n" + table + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
