// SPDX-License-Identifier: Apache-2.0

// Command python compares tickprof's Python frames with austin's on the
// same run of testdata/python/burn.py (Worker.burn_a and burn_b, identical
// bodies run 3:1): for each installed CPython, each round starts the
// program, then attaches the sampler (999 Hz) and austin (-s -i 1000: on
// CPU, 1 ms) to it at once, both until it exits, and prints burn_a's share
// of the two as each saw it, with tickprof's 95% interval, and the
// difference. Rounds go through the versions in turn (A B C A B C), so
// that the machine's load falls on all alike.
//
// Usage (root): go run ./bench/python [-rounds 3] [-secs 5]; make
// bench-python. Results: docs/performance.md, "Python frames".
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/sampler"
)

func main() {
	rounds := flag.Int("rounds", 3, "rounds per interpreter")
	secs := flag.Float64("secs", 5, "seconds each round samples")
	flag.Parse()
	if err := run(*rounds, *secs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/python:", err)
		os.Exit(1)
	}
}

func run(rounds int, secs float64) error {
	script, err := filepath.Abs("testdata/python/burn.py")
	if err != nil {
		return err
	}
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	austin, err := exec.LookPath("austin")
	if err != nil {
		return fmt.Errorf("austin not installed (apt-get install austin): %w", err)
	}
	pys, missing := pythons()
	// The sampling program's run time, for its cost per sample.
	if st, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME); err == nil {
		defer st.Close()
	}
	ver, _ := exec.Command(austin, "--version").Output()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("bench/python, %s, %s, load average at start %s; %d rounds of %.0f s, interleaved by interpreter; not installed: %s\n\n",
		time.Now().UTC().Format(time.RFC3339), strings.TrimSpace(string(ver)), strings.Join(strings.Fields(string(load))[:3], " "),
		rounds, secs, strings.Join(missing, ", "))
	fmt.Println("| interpreter | round | tickprof: burn_a share [95%] (samples) | BPF µs per sample | austin: share (samples) | tickprof − austin |")
	fmt.Println("|---|---|---|---|---|---|")
	for r := 1; r <= rounds; r++ {
		for _, py := range pys {
			row, err := round(py, script, austin, secs)
			if err != nil {
				return fmt.Errorf("%s: %w", py.Name, err)
			}
			fmt.Printf("| %s | %d | %s |\n", py.Name, r, row)
		}
	}
	return nil
}

// round runs the program once under both samplers and returns the row's
// last three cells.
func round(py python, script, austin string, secs float64) (string, error) {
	// Half a second for the imports before both attach.
	target := exec.Command(py.Exe, script, strconv.FormatFloat(secs+0.5, 'f', 1, 64))
	if err := target.Start(); err != nil {
		return "", err
	}
	defer target.Process.Kill()
	time.Sleep(500 * time.Millisecond)
	out := filepath.Join(os.TempDir(), fmt.Sprintf("tickprof-austin-%d", target.Process.Pid))
	defer os.Remove(out)
	// Debian 12's austin (1.0.1) reads CPython up to 3.10: on a newer one
	// its search fails, and what it does to the target meanwhile cost
	// tickprof its samples; it is not run there.
	var au *exec.Cmd
	if py.Minor <= austinNewest {
		au = exec.Command(austin, "-s", "-i", "1000", "-o", out, "-p", strconv.Itoa(target.Process.Pid))
		if err := au.Start(); err != nil {
			return "", err
		}
	}
	s, err := sampler.Open(context.Background(), sampler.Config{Frequency: 999, PIDs: []int{target.Process.Pid}})
	if err != nil {
		return "", err
	}
	defer s.Close()
	res, err := s.Run(context.Background())
	if err != nil {
		return "", err
	}
	target.Wait()
	cell, err := tickprofCell(res)
	if err != nil {
		return "", err
	}
	if au == nil {
		return cell + fmt.Sprintf(" | not run (austin reads up to 3.%d) | –", austinNewest), nil
	}
	auErr := au.Wait()
	a, b := tickprofCounts(res.Profile)
	aa, ab, err := austinCounts(out)
	if err != nil || aa+ab == 0 {
		return cell + fmt.Sprintf(" | austin read no stack (%v) | – ", firstErr(auErr, err)), nil
	}
	ts, as := float64(a)/float64(a+b), float64(aa)/float64(aa+ab)
	return fmt.Sprintf("%s | %.3f (%d) | %+.1f points", cell, as, aa+ab, 100*(ts-as)), nil
}

// tickprofCell is the row's share with its interval and samples, and the
// sampling program's time per sample.
func tickprofCell(res *sampler.Result) (string, error) {
	a, b := tickprofCounts(res.Profile)
	cell := "–"
	if a+b > 0 {
		p, err := estimate.Share(uint64(a), uint64(a+b), estimate.Options{Confidence: 0.95})
		if err != nil {
			return "", err
		}
		cell = fmt.Sprintf("%.3f [%.3f, %.3f] (%d)", p.Share, p.Low, p.High, a+b)
	}
	if st := res.Stats; st.Kept > 0 && st.BPFRuntime > 0 {
		return fmt.Sprintf("%s | %.1f", cell, float64(st.BPFRuntime.Nanoseconds())/1e3/float64(st.Kept)), nil
	}
	return cell + " | –", nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return fmt.Errorf("no samples of burn_a or burn_b")
}

// austinNewest is the newest CPython 3.x Debian 12's austin reads.
const austinNewest = 10

// python is one installed interpreter.
type python struct {
	Name, Exe string
	Minor     int
}

// pythons finds pyenv's newest CPython of each minor version 3.8-3.13
// (pyenv root, else ~/.pyenv) and Debian's /usr/bin/python3.11, as the
// sampler's tests do; missing lists the others.
func pythons() (found []python, missing []string) {
	root := os.Getenv("PYENV_ROOT")
	if out, err := exec.Command("pyenv", "root").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".pyenv")
	}
	for minor := 8; minor <= 13; minor++ {
		v := "3." + strconv.Itoa(minor)
		dirs, _ := filepath.Glob(filepath.Join(root, "versions", v+".*", "bin", "python"+v))
		sort.Strings(dirs)
		if len(dirs) == 0 {
			missing = append(missing, v)
			continue
		}
		exe := dirs[len(dirs)-1]
		found = append(found, python{Name: v + " (pyenv " + filepath.Base(filepath.Dir(filepath.Dir(exe))) + ")", Exe: exe, Minor: minor})
	}
	if _, err := os.Stat("/usr/bin/python3.11"); err == nil {
		found = append(found, python{Name: "3.11 (Debian)", Exe: "/usr/bin/python3.11", Minor: 11})
	} else {
		missing = append(missing, "Debian's python3.11")
	}
	return found, missing
}

// tickprofCounts counts the samples whose innermost of the two functions
// is burn_a, and burn_b (named Worker.burn_a from 3.11).
func tickprofCounts(p *sampler.Profile) (a, b int64) {
	for _, s := range p.Samples {
		for _, li := range s.Locations {
			fn := p.Locations[li].Function
			if strings.HasSuffix(fn, "burn_a") {
				a += s.Count
				break
			}
			if strings.HasSuffix(fn, "burn_b") {
				b += s.Count
				break
			}
		}
	}
	return a, b
}

// austinCounts counts austin's samples (collapsed stacks, "Thread
// ID;func (file);L12;... value", root first) through burn_a and burn_b.
func austinCounts(file string) (a, b int64, err error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, ";burn_a ("):
			a++
		case strings.Contains(line, ";burn_b ("):
			b++
		}
	}
	return a, b, sc.Err()
}
