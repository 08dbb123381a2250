// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/tickprof/tickprof/bench/benchkit"
	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// workload is one run of the target: threads threads calling bud_fn for
// seconds, with work iterations of other work between calls.
type workload struct {
	bin     string
	threads int
	seconds float64
	work    int
}

// buildTarget compiles target.c into dir.
func buildTarget(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(dir, "target")
	err := benchkit.BuildC(bin, filepath.Join(filepath.Dir(file), "target.c"), "-pthread", "-fcf-protection=none")
	return bin, err
}

// start starts the target, held until Run.
func (w workload) start() (*benchkit.Target, error) {
	return benchkit.Start(w.bin, "", fmt.Sprint(w.threads), fmt.Sprint(w.seconds), fmt.Sprint(w.work))
}

// tput is the target's throughput: calls per second of wall-clock time
// and of its CPU time.
type tput struct{ wall, cpu float64 }

// unprobed runs the target alone and returns its throughput.
func (w workload) unprobed() (tput, error) {
	t, err := w.start()
	if err != nil {
		return tput{}, err
	}
	defer t.Kill()
	return throughput(t)
}

// throughput releases the target and reads its throughput at its end.
func throughput(t *benchkit.Target) (tput, error) {
	v := t.RunAll()
	r := tput{wall: v["calls_per_sec"], cpu: v["calls_per_cpu_sec"]}
	if r.wall <= 0 || r.cpu <= 0 {
		return r, errors.New("the target printed no throughput")
	}
	return r, nil
}

// budTarget is the function the benchmark times.
func budTarget() timing.Targets { return timing.Targets{Users: []string{"bud_fn"}, MaxProbes: 1} }

// timed runs the target under a tickprof timing session (cfg, with the
// target's PID and bud_fn filled in) until it exits, as `tickprof time -p`
// does, and returns the result and the target's throughput.
func (w workload) timed(cfg timing.Config) (*timing.Result, tput, error) {
	t, err := w.start()
	if err != nil {
		return nil, tput{}, err
	}
	defer t.Kill()
	cfg.PID = t.Pid()
	cfg.Targets = budTarget()
	s, err := timing.Open(context.Background(), cfg)
	if err != nil {
		return nil, tput{}, err
	}
	defer s.Close()
	var run *timing.Result
	var rerr error
	done := make(chan struct{})
	go func() { run, rerr = s.Run(context.Background()); close(done) }()
	r, err := throughput(t)
	<-done
	if err == nil {
		err = rerr
	}
	return run, r, err
}

// tool runs the target under another tracer (argv, with PID and BIN
// replaced), started and attached first: its output must show ready
// before the target is released. It returns the target's throughput.
func (w workload) tool(argv []string, ready string) (tput, error) {
	t, err := w.start()
	if err != nil {
		return tput{}, err
	}
	defer t.Kill()
	args := make([]string, len(argv))
	for i, a := range argv {
		a = strings.ReplaceAll(a, "PID", fmt.Sprint(t.Pid()))
		args[i] = strings.ReplaceAll(a, "BIN", w.bin)
	}
	cmd := exec.Command(args[0], args[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return tput{}, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return tput{}, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
		cmd.Wait()
		timer.Stop()
	}()
	if err := waitFor(out, ready, 90*time.Second); err != nil {
		return tput{}, fmt.Errorf("%s: %w", args[0], err)
	}
	time.Sleep(time.Second) // the probes attach after the message
	return throughput(t)
}

// waitFor reads r until a line contains want, then drains it in the
// background.
func waitFor(r interface{ Read([]byte) (int, error) }, want string, limit time.Duration) error {
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), want) {
				ok = true
				found <- true
			}
		}
		if !ok {
			found <- false
		}
	}()
	select {
	case ok := <-found:
		if !ok {
			return fmt.Errorf("exited before printing %q", want)
		}
		return nil
	case <-time.After(limit):
		return fmt.Errorf("no %q within %v", want, limit)
	}
}

// corrector is this machine's calibration; without one, when measure is
// set, the user probes' T_ovhd measured now with the calibration's own
// code (calibrate.MeasureOverheads, not saved), and otherwise a
// calibration holding only the given T_ovhd (ns, ±30%). It also says which.
func corrector(tovhd float64, measure bool, dir string) (calibrate.Corrector, string, error) {
	if c, err := calibrate.LoadCorrector(""); err == nil {
		if o, ok := c.Overhead("user", 0.95); ok {
			return c, fmt.Sprintf("T_ovhd from this machine's calibration: %.0f ns [%.0f, %.0f]", o.Mean, o.Low, o.High), nil
		}
	}
	cal := &calibrate.Calibration{Overheads: []calibrate.Overhead{{Kind: calibrate.KindUser, Target: "assumed",
		Calls: 1000, MeanNs: tovhd, LowNs: 0.7 * tovhd, HighNs: 1.3 * tovhd, StdErrNs: 0.3 * tovhd / 1.96, Confidence: 0.95}}}
	note := fmt.Sprintf("T_ovhd assumed (no calibration of this machine): %.0f ns [%.0f, %.0f]", tovhd, 0.7*tovhd, 1.3*tovhd)
	if measure {
		var ovs []calibrate.Overhead
		var err error
		for try := 0; try < 3; try++ { // a loaded machine can starve a run of calls
			ovs, _, err = calibrate.MeasureOverheads(context.Background(), dir, calibrate.OverheadOptions{Kinds: []calibrate.ProbeKind{calibrate.KindUser}})
			if err == nil {
				break
			}
		}
		if err != nil {
			return calibrate.Corrector{}, "", fmt.Errorf("measure the probe overhead: %w", err)
		}
		cal.Overheads = ovs
		o := ovs[0]
		note = fmt.Sprintf("T_ovhd measured at the start (calibrate.MeasureOverheads): %.0f ns [%.0f, %.0f]", o.MeanNs, o.LowNs, o.HighNs)
	}
	return calibrate.Corrector{Cal: cal}, note, nil
}

// timeTo is how long a run of r takes to reach the mean's relative
// half-width rel: under a budget tickprof's own forecast
// (estimate.WindowsNeeded at the budget's duty cycle); probing all the
// time, the run's length scaled by (half-width/rel)^2.
func timeTo(r *timing.Result, rel float64, window time.Duration) (time.Duration, error) {
	if len(r.Targets) == 0 || r.Targets[0].Err != "" {
		return 0, errors.New("no estimate")
	}
	if b := r.Budget; b != nil && b.Binding && len(b.Windowed) > 0 {
		m, err := estimate.WindowsNeeded(b.Windowed[0], rel)
		if err != nil {
			return 0, err
		}
		return time.Duration(estimate.WindowedRunTime(m, float64(window), b.NextDuty)), nil
	}
	h := r.Targets[0].Raw.RelHalfWidth
	if !(h > 0) {
		return 0, errors.New("no interval")
	}
	return time.Duration(float64(r.Duration) * (h / rel) * (h / rel)), nil
}
