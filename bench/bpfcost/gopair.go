// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"text/tabwriter"

	"github.com/cilium/ebpf"

	"github.com/tickprof/tickprof/bench/benchkit"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/symtab"
)

// goConfig is one way of probing the Go target's main.target.
type goConfig struct {
	name   string
	bin    string
	attach func(pid int) (func(), error)
}

// runGo measures a Go function's entry+exit against the C pair on the same
// machine: each repetition runs the C target unprobed, with the empty
// uprobe+uretprobe pair and with tickprof, then the Go target
// (testdata/go/probecost, main.target) unprobed, with empty programs on
// tickprof's Go sites (the stack check's JBE, emulated; the POP RBP before
// the RET, single-stepped), with the exit on the RET instead, and with
// tickprof. Added ns per call are each target's time per call minus its
// unprobed time in the same repetition.
func runGo(cbin string, calls, reps int, chrt string, objs *CostObjects) error {
	// The Go target times its whole loop: so do the C runs beside it.
	perRun = "mean"
	dir, err := os.MkdirTemp("", "tickprof-bpfcost-go")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	goConfigs, done, err := goPairConfigs(dir, objs)
	if err != nil {
		return err
	}
	defer done()
	cConfigs := []config{configs[0], configs[1], configByKey("tc")}
	cAll := make([][]sample, len(cConfigs))
	gAll := make([][]float64, len(goConfigs))
	for r := 0; r < reps; r++ {
		for i, c := range cConfigs {
			s, err := runOnce(cbin, chrt, calls, c, objs)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			cAll[i] = append(cAll[i], s)
			fmt.Fprintf(os.Stderr, "rep %d %-40s %7.0f ns/call\n", r+1, "C "+c.name, s.nsPerCall)
		}
		for i, g := range goConfigs {
			ns, err := runGoOnce(g.bin, chrt, calls/10, g.attach)
			if err != nil {
				return fmt.Errorf("%s: %w", g.name, err)
			}
			gAll[i] = append(gAll[i], ns)
			fmt.Fprintf(os.Stderr, "rep %d %-40s %7.0f ns/call\n", r+1, g.name, ns)
		}
	}
	reportGo(cAll, gAll, goConfigs)
	fmt.Printf("medians [min, max] over %d interleaved repetitions; ratios within a repetition; C %d calls, Go %d calls per run\n", reps, calls, calls/10)
	return nil
}

// goPairConfigs builds testdata/go/probecost into dir and returns the ways
// of probing its main.target, and a function that closes its symbol table.
func goPairConfigs(dir string, objs *CostObjects) ([]goConfig, func(), error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	gobin := filepath.Join(dir, "probecost")
	build := exec.Command("go", "build", "-o", gobin, "./testdata/go/probecost")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("go build: %v: %s", err, out)
	}
	tab, err := symtab.Open(gobin)
	if err != nil {
		return nil, nil, err
	}
	sym := tab.Lookup("main.target")[0]
	ps, err := tab.ProbeSites(sym)
	if err != nil || len(ps.Exits) != 1 {
		tab.Close()
		return nil, nil, fmt.Errorf("main.target probe sites %+v: %v", ps, err)
	}
	at := func(addrs ...uint64) func(int) (func(), error) {
		return func(pid int) (func(), error) { return emptyAt(gobin, tab, objs, pid, addrs) }
	}
	tick := func(pid int) (func(), error) {
		specs, err := loader.ResolveUser(pid, "main.target", 1)
		if err != nil {
			return nil, err
		}
		s, err := loader.Open(loader.Options{Clock: loader.Clock{Kind: loader.ClockJiffies}, PID: pid}, specs)
		if err != nil {
			return nil, err
		}
		return func() { s.Stop(); s.Close() }, nil
	}
	return []goConfig{
		{"Go unprobed", gobin, nil},
		{"Go empty JBE + POP RBP (tickprof's sites)", gobin, at(ps.Entry, ps.Exits[0].Addr)},
		{"Go empty JBE + RET", gobin, at(ps.Entry, ps.Returns[0])},
		{"Go tickprof jiffies", gobin, tick},
	}, func() { tab.Close() }, nil
}

// emptyAt attaches the empty program at each of addrs of bin in pid and
// returns the function that detaches them.
func emptyAt(bin string, tab *symtab.Table, objs *CostObjects, pid int, addrs []uint64) (func(), error) {
	sites := map[uint64]*ebpf.Program{}
	for _, a := range addrs {
		sites[a] = objs.CostE0
	}
	return loader.AttachAt(bin, tab, "main.target", pid, sites)
}

// reportGo prints the Go configurations' added time per call against the C
// pair's and C tickprof's of the same repetitions.
func reportGo(cAll [][]sample, gAll [][]float64, goConfigs []goConfig) {
	added := func(v, base []float64) []float64 {
		out := make([]float64, len(v))
		for r := range v {
			out[r] = v[r] - base[r]
		}
		return out
	}
	cNs := func(i int) []float64 { return col(cAll[i], func(s sample) float64 { return s.nsPerCall }) }
	cEmpty := added(cNs(1), cNs(0))
	cTick := added(cNs(2), cNs(0))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "configuration\tadded ns/call median [range]\tover the C empty pair\tover C tickprof\t\n")
	fmt.Fprintf(tw, "C empty uprobe+uretprobe (push %%rbp)\t%s\t1\t-\t\n", medRange(cEmpty))
	fmt.Fprintf(tw, "C tickprof jiffies\t%s\t%s\t1\t\n", medRange(cTick), benchkit.MedRange(ratio(cTick, cEmpty), "%.2f"))
	for i := 1; i < len(goConfigs); i++ {
		a := added(gAll[i], gAll[0])
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", goConfigs[i].name, medRange(a), benchkit.MedRange(ratio(a, cEmpty), "%.2f"), benchkit.MedRange(ratio(a, cTick), "%.2f"))
	}
	tw.Flush()
}

func ratio(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}

// runGoOnce runs the Go target for calls calls with attach (nil: unprobed)
// and returns its time per call.
func runGoOnce(bin, chrt string, calls int, attach func(int) (func(), error)) (float64, error) {
	cmd := exec.Command(bin, "-calls", fmt.Sprint(calls))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		return 0, fmt.Errorf("the Go target is not ready: %q", sc.Text())
	}
	if chrt != "" {
		if out, err := exec.Command(chrt, "-a", "-f", "-p", "50", fmt.Sprint(cmd.Process.Pid)).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("chrt: %v: %s", err, out)
		}
	}
	detach := func() {}
	if attach != nil {
		if detach, err = attach(cmd.Process.Pid); err != nil {
			return 0, err
		}
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	ns := -1.0
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "ns_per_call=%g", &ns); err == nil {
			break
		}
	}
	cmd.Wait()
	detach()
	if ns < 0 {
		return 0, fmt.Errorf("the Go target printed no timing")
	}
	return ns, nil
}
