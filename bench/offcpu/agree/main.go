// SPDX-License-Identifier: Apache-2.0

// Command agree is the off-CPU coverage suite (`make coverage-offcpu`): it
// runs testdata/sample/offcpu.c (a thread blocked in read about 70% of its
// wall time, measuring its own blocked time) N times, each run traced at
// once by `tickprof sample --off-cpu -p PID` and by libbpf-tools'
// `offcputime -p PID`, and counts how often tickprof's interval on the
// off-CPU time through the pipe read holds (a) the time the target measured
// itself blocked in read and (b) offcputime's exact sum for the same
// stacks. The stacks are matched by their kernel frame anon_pipe_read (the
// pipe read), which both tools see: offcputime walks user stacks by frame
// pointers, which lose wait_byte below glibc's read. It prints one line
// per run and a Markdown section for docs/coverage.md.
//
// Run as root from the repository root:
//
//	agree [-tickprof bin/tickprof] [-runs 10] [-p 0.2,0] [-conf 0.95]
//
// -p lists the sampling probabilities to run (0: tickprof chooses); the
// runs go round-robin over them.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("tickprof", "bin/tickprof", "the tickprof binary")
	runs := flag.Int("runs", 10, "runs per probability")
	probs := flag.String("p", "0.2,0", "sampling probabilities (0: chosen by tickprof)")
	conf := flag.Float64("conf", 0.95, "confidence level")
	flag.Parse()
	if err := run(*bin, *runs, *probs, *conf); err != nil {
		fmt.Fprintln(os.Stderr, "agree:", err)
		os.Exit(1)
	}
}

// result is one run's figures (ns).
type result struct {
	p                  string
	est, low, high     float64
	truth, offcputime  float64
	chosen             string
	unseen             string
	holdsOwn, holdsOCT bool
}

func run(bin string, runs int, probs string, conf float64) error {
	if _, err := exec.LookPath("offcputime"); err != nil {
		return errors.New("offcputime not found (apt-get install libbpf-tools)")
	}
	dir, err := os.MkdirTemp("", "tickprof-agree")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	target := filepath.Join(dir, "offcpu")
	if b, err := exec.Command("cc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-pthread",
		"-o", target, "testdata/sample/offcpu.c").CombinedOutput(); err != nil {
		return fmt.Errorf("build the target: %v\n%s", err, b)
	}
	var all []result
	for i := 0; i < runs; i++ {
		for _, p := range strings.Split(probs, ",") {
			r, err := once(bin, target, dir, p, conf)
			if err != nil {
				return err
			}
			fmt.Printf("run %d p=%s chosen=%s: tickprof %.4g [%.4g, %.4g] ms, own %.4g ms, offcputime %.4g ms (%v, %v), %s switch-ins unseen\n",
				i+1, p, r.chosen, r.est/1e6, r.low/1e6, r.high/1e6, r.truth/1e6, r.offcputime/1e6, r.holdsOwn, r.holdsOCT, r.unseen)
			all = append(all, r)
		}
	}
	printSection(all, probs, conf)
	return nil
}

// once runs the target traced by both tools.
func once(bin, target, dir, p string, conf float64) (result, error) {
	r := result{p: p}
	kv := filepath.Join(dir, "kv")
	// 1.5 s before the threads start (both tools attach), 2.5 s of
	// cycles, 4 s after (offcputime prints, with the symbols, while the
	// target lives).
	tgt := exec.Command(target, kv, "10000", "3000", "250", "1500", "4000")
	if err := tgt.Start(); err != nil {
		return r, err
	}
	defer tgt.Wait()
	pid := strconv.Itoa(tgt.Process.Pid)
	var oct bytes.Buffer
	oc := exec.Command("offcputime", "-p", pid, "5")
	oc.Stdout = &oct
	if err := oc.Start(); err != nil {
		return r, err
	}
	args := []string{"sample", "--off-cpu", "-p", pid, "--top", "0", "--json", "-o", "",
		"--confidence", strconv.FormatFloat(conf, 'g', -1, 64)}
	if p != "0" {
		args = append(args, "--off-cpu-prob", p)
	}
	var tp, tpErr bytes.Buffer
	tc := exec.Command(bin, args...)
	tc.Stdout, tc.Stderr = &tp, &tpErr
	time.Sleep(100 * time.Millisecond)
	if err := tc.Run(); err != nil {
		return r, fmt.Errorf("tickprof: %v\n%s", err, tpErr.String())
	}
	if err := oc.Wait(); err != nil {
		return r, fmt.Errorf("offcputime: %v", err)
	}
	if err := readTickprof(&r, tp.Bytes(), tpErr.String()); err != nil {
		return r, err
	}
	r.offcputime = offcputimeSum(oct.String(), readFrame) * 1e3
	own, err := os.ReadFile(kv)
	if err != nil {
		return r, err
	}
	r.truth = kvValue(string(own), "blocked_ns")
	r.holdsOwn = r.low <= r.truth && r.truth <= r.high
	r.holdsOCT = r.low <= r.offcputime && r.offcputime <= r.high
	return r, nil
}

// readFrame is the kernel function of a pipe read, on both tools' stacks.
const readFrame = "anon_pipe_read"

// readTickprof reads the readFrame row of tickprof's JSON table and the
// probability from its statistics line.
func readTickprof(r *result, js []byte, stderr string) error {
	var t struct {
		Rows []struct {
			Function string `json:"function"`
			Cum      struct {
				Mean float64 `json:"ns"`
				Low  float64 `json:"low_ns"`
				High float64 `json:"high_ns"`
			} `json:"cum"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(js, &t); err != nil {
		return fmt.Errorf("tickprof's table: %v", err)
	}
	for _, row := range t.Rows {
		if row.Function == readFrame {
			r.est, r.low, r.high = row.Cum.Mean, row.Cum.Low, row.Cum.High
		}
	}
	if m := regexp.MustCompile(`(\d+) switch-ins unseen`).FindStringSubmatch(stderr); m != nil {
		r.unseen = m[1]
	}
	if m := regexp.MustCompile(`p = ([0-9.e-]+) at the end(, from ([0-9.e-]+) to ([0-9.e-]+))?`).FindStringSubmatch(stderr); m != nil {
		r.chosen = m[1]
		if m[2] != "" {
			r.chosen = m[3] + "-" + m[4]
		}
	}
	return nil
}

// offcputimeSum adds the totals (us) of offcputime's stacks that name fn.
func offcputimeSum(out, fn string) float64 {
	var sum float64
	for _, block := range strings.Split(out, "\n\n") {
		if !strings.Contains(block, fn) {
			continue
		}
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if v, err := strconv.ParseFloat(strings.TrimSpace(lines[len(lines)-1]), 64); err == nil {
			sum += v
		}
	}
	return sum
}

func kvValue(s, key string) float64 {
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			x, _ := strconv.ParseFloat(v, 64)
			return x
		}
	}
	return math.NaN()
}

// printSection prints the Markdown section: per probability, runs, how
// many intervals held each truth, and the mean relative half-width.
func printSection(all []result, probs string, conf float64) {
	fmt.Printf("\n| p | runs | interval holds own blocked time | interval holds offcputime's sum | mean half-width | tickprof / offcputime | offcputime / own |\n|---|---|---|---|---|---|---|\n")
	for _, p := range strings.Split(probs, ",") {
		var n, own, oct int
		var hw, ratio, vsOCT float64
		chosen := p
		for _, r := range all {
			if r.p != p {
				continue
			}
			n++
			if r.holdsOwn {
				own++
			}
			if r.holdsOCT {
				oct++
			}
			hw += (r.high - r.low) / 2 / r.est
			ratio += r.offcputime / r.truth
			vsOCT += r.est / r.offcputime
			if p == "0" {
				chosen = "chosen (" + r.chosen + ")"
			}
		}
		if n == 0 {
			continue
		}
		fmt.Printf("| %s | %d | %d of %d | %d of %d | %.0f%% | %.3f | %.3f |\n", chosen, n, own, n, oct, n, 100*hw/float64(n), vsOCT/float64(n), ratio/float64(n))
	}
	fmt.Printf("\n%.0f%% intervals.\n", 100*conf)
}
