package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/sampler"
	"github.com/tickprof/tickprof/testdata/demo"
)

// demoFlags are the options of `tickprof demo`.
type demoFlags struct {
	dir       string
	precision string
	limit     time.Duration
	sampleFor time.Duration
	freq      int
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Time and sample a bundled workload, with the known truth beside each interval",
		Long: `demo builds a small C workload with gcc (three threads calling functions of
known duration: about 5 µs and 25 µs of spinning, and a 1 ms sleep; each
function measures itself with clock_gettime), then:

  1. times the three functions with the jiffies clock (a 4 ms tick here,
     hundreds of times longer than the shortest function) until every
     interval is within ±5% at 95% confidence, or --limit;
  2. samples the workload's stacks at -F Hz for --sample;
  3. prints each function's interval beside the truth the workload measured,
     raw and corrected for the probe overhead T_ovhd (from tickprof
     calibrate, or measured now when this machine has no calibration);
  4. writes demo-time.pb.gz and demo-cpu.pb.gz and the go tool pprof commands
     that open them.

It needs root (or CAP_BPF and CAP_PERFMON), gcc, and a kernel with BTF and
uprobes (see tickprof doctor).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", ".", "write demo-time.pb.gz and demo-cpu.pb.gz into `DIR`")
	fl.StringVar(&f.precision, "precision", "5%", "stop timing when every interval is within this share of its mean")
	fl.DurationVar(&f.limit, "limit", 35*time.Second, "stop timing after this long even if the precision is not reached")
	fl.DurationVar(&f.sampleFor, "sample", 5*time.Second, "how long to sample")
	fl.IntVarP(&f.freq, "frequency", "F", 999, "sampling rate per CPU (`HZ`)")
	return cmd
}

// demoTruth is one line the workload writes: its own measurement.
type demoTruth struct {
	calls      uint64
	mean, sdev float64
}

func runDemo(cmd *cobra.Command, f demoFlags) error {
	if err := checkDemoFlags(f); err != nil {
		return err
	}
	if err := demoRequirements(); err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	work, err := os.MkdirTemp("", "tickprof-demo-")
	if err != nil {
		return fmt.Errorf("make a build directory: %w", err)
	}
	defer os.RemoveAll(work)
	exe, err := buildWorkload(work)
	if err != nil {
		return err
	}
	timeOut := filepath.Join(f.dir, "demo-time.pb.gz")
	cpuOut := filepath.Join(f.dir, "demo-cpu.pb.gz")
	jsonOut := filepath.Join(work, "time.json")
	truthFile := filepath.Join(work, "truth.txt")

	// The probe overhead: this machine's calibration, or a quick one now.
	ovhd, ovhdFrom, err := demoOverhead(ctx, work, errOut)
	if err != nil {
		return err
	}

	// 1. Time, with the jiffies clock, until the precision or the limit.
	// --no-correct: the table below subtracts the overhead once, the one it
	// prints (this machine's calibration, or the quick one just made).
	timeArgs := []string{"--clock", "jiffies", "--precision", f.precision, "--duration", f.limit.String(),
		"--no-correct", "--json", jsonOut, "-o", timeOut}
	for _, fn := range demo.Functions() {
		timeArgs = append(timeArgs, "-u", fn)
	}
	timeArgs = append(timeArgs, "--", exe, "-t", truthFile, strconv.Itoa(int(f.limit.Seconds())+30))
	fmt.Fprintf(out, "== tickprof time %s\n", strings.Join(timeArgs, " "))
	if err := runSub(ctx, newTimeCmd(), timeArgs, out, errOut); err != nil {
		return fmt.Errorf("demo: timing: %w", err)
	}
	truth, err := readTruth(truthFile)
	if err != nil {
		return err
	}
	targets, err := readTimeJSON(jsonOut)
	if err != nil {
		return err
	}

	// 2. Sample.
	sampleArgs := []string{"-F", strconv.Itoa(f.freq), "--duration", f.sampleFor.String(), "-o", cpuOut, "--top", "8",
		"--", exe, "-t", filepath.Join(work, "truth-sample.txt"), strconv.Itoa(int(f.sampleFor.Seconds()) + 30)}
	fmt.Fprintf(out, "\n== tickprof sample %s\n", strings.Join(sampleArgs, " "))
	if err := runSub(ctx, newSampleCmd(), sampleArgs, out, errOut); err != nil {
		return fmt.Errorf("demo: sampling: %w", err)
	}

	// 3. The intervals beside the truth.
	fmt.Fprintf(out, "\n== each function's mean per call, timed with a %s clock, beside the truth the workload measured itself\n", formatNs(targets.Resolution))
	if err := writeDemoTable(out, targets, truth, ovhd); err != nil {
		return err
	}
	fmt.Fprintf(out, "T_ovhd (probe overhead subtracted in CORRECTED) = %s [%s, %s] at %s, %s.\n",
		formatNs(ovhd.MeanNs), formatNs(ovhd.LowNs), formatNs(ovhd.HighNs), formatPercent(ovhd.Confidence), ovhdFrom)
	fmt.Fprintf(out, "\nOpen the profiles:\n  go tool pprof -top %s\n  go tool pprof -http=: %s\n  go tool pprof -top %s\n", timeOut, timeOut, cpuOut)
	return nil
}

// demoRequirements says, in one line, everything the demo lacks: root (or
// CAP_BPF and CAP_PERFMON), gcc, kernel BTF.
// checkDemoFlags validates every flag before anything is built or run
// (-F 0 failed only after 40 s of timing).
func checkDemoFlags(f demoFlags) error {
	p, err := parsePercent(f.precision)
	if err != nil {
		return usagef("--precision: %v", err)
	}
	if !(p > 0 && p < 1) {
		return usagef("--precision %s: want a relative half-width above 0%% and below 100%%, e.g. 5%%", f.precision)
	}
	if f.limit < time.Second || f.sampleFor < time.Second || f.limit > time.Hour || f.sampleFor > time.Hour {
		return usagef("--limit %s, --sample %s: want each from 1s to 1h", f.limit, f.sampleFor)
	}
	if f.freq < 1 || f.freq > sampler.MaxFrequency {
		return usagef("-F %d: the rate must be between 1 and %d samples per second", f.freq, sampler.MaxFrequency)
	}
	for _, name := range []string{"demo-time.pb.gz", "demo-cpu.pb.gz"} {
		if err := checkOutput("--dir", filepath.Join(f.dir, name)); err != nil {
			return err
		}
	}
	return nil
}

func demoRequirements() error {
	var missing []string
	if err := loader.CheckPrivileges(); errors.Is(err, loader.ErrNotRoot) {
		missing = append(missing, "root (or CAP_BPF and CAP_PERFMON) to load BPF programs: run `sudo tickprof demo`")
	} else if errors.Is(err, loader.ErrNoBTF) {
		missing = append(missing, "a kernel with BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF=y)")
	} else if err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		missing = append(missing, "gcc to build the workload: apt-get install gcc")
	}
	if len(missing) > 0 {
		return fmt.Errorf("demo needs %s", strings.Join(missing, "; and "))
	}
	return nil
}

// buildWorkload compiles the bundled workload with gcc.
func buildWorkload(dir string) (string, error) {
	src := filepath.Join(dir, "workload.c")
	exe := filepath.Join(dir, "workload")
	args := demo.GCCArgs(src, exe)
	// BuildC takes the flags before and the libraries after the source.
	var flags, libs []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-o" || args[i] == src:
			if args[i] == "-o" {
				i++
			}
		case strings.HasPrefix(args[i], "-l"):
			libs = append(libs, args[i])
		default:
			flags = append(flags, args[i])
		}
	}
	got, err := calibrate.BuildC(dir, "workload", demo.Source, flags, libs)
	if err != nil {
		return "", fmt.Errorf("build the demo workload: %w", err)
	}
	return got, nil
}

// demoOverhead returns the uprobe T_ovhd of this machine's calibration,
// or measures it now (not saved: `tickprof calibrate` does the full job).
func demoOverhead(ctx context.Context, dir string, errOut io.Writer) (calibrate.Overhead, string, error) {
	if c, err := calibrate.Load(); err == nil {
		if o, ok := c.Overhead("user"); ok {
			return o, "from this machine's calibration of " + c.Date.Format("2006-01-02 15:04 MST"), nil
		}
	}
	fmt.Fprintln(errOut, "tickprof: no calibration for this machine: measuring the uprobe overhead on an empty function (2s)...")
	ovs, _, err := calibrate.MeasureOverheads(ctx, dir, calibrate.OverheadOptions{Duration: 2 * time.Second, Kinds: []string{"user"}})
	if err != nil {
		return calibrate.Overhead{}, "", err
	}
	if len(ovs) != 1 {
		return calibrate.Overhead{}, "", errors.New("demo: the probe overhead could not be measured on the empty function: run `sudo tickprof calibrate` to see why")
	}
	return ovs[0], "measured just now (run tickprof calibrate to keep one)", nil
}

// runSub runs one of tickprof's commands with args.
func runSub(ctx context.Context, c *cobra.Command, args []string, out, errOut io.Writer) error {
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(errOut)
	c.SilenceUsage, c.SilenceErrors = true, true
	return c.ExecuteContext(ctx)
}

// readTruth parses the workload's "truth func=F calls=N mean_ns=X sd_ns=S"
// lines.
func readTruth(path string) (map[string]demoTruth, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("demo: the workload wrote no measurements of its own (%w)", err)
	}
	defer fh.Close()
	out := map[string]demoTruth{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var fn string
		var t demoTruth
		if _, err := fmt.Sscanf(sc.Text(), "truth func=%s calls=%d mean_ns=%g sd_ns=%g", &fn, &t.calls, &t.mean, &t.sdev); err != nil {
			return nil, fmt.Errorf("demo: workload output %q: %w", sc.Text(), err)
		}
		out[fn] = t
	}
	return out, sc.Err()
}

// readTimeJSON reads the timing results the demo's `time` run wrote.
func readTimeJSON(path string) (*export.TimeRun, error) {
	run, err := export.ReadTimeJSONFile(path)
	if err != nil {
		return nil, fmt.Errorf("demo: read the timing results: %w", err)
	}
	return run, nil
}

// resultOf is a target's measured estimate, with the normal standard error
// its interval implies (for the correction's combined uncertainty).
func resultOf(t export.TimeTarget) (estimate.Result, bool) {
	r := t.Raw
	if t.Err != "" || !(r.Confidence > 0 && r.Confidence < 1) {
		return estimate.Result{}, false
	}
	r.StdErr = (r.High - r.Low) / 2 / estimate.Z(r.Confidence)
	return r, true
}

// writeDemoTable prints raw and corrected intervals beside the truth.
func writeDemoTable(w io.Writer, run *export.TimeRun, truth map[string]demoTruth, ovhd calibrate.Overhead) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FUNCTION\tCALLS\tMEAN (jiffies)\tINTERVAL\tCORRECTED\tINTERVAL\tTRUTH\tTRUTH INSIDE?\t")
	for _, t := range run.Targets {
		tr, haveTruth := truth[t.Name]
		truthS := "-"
		if haveTruth {
			truthS = formatNs(tr.mean)
		}
		r, ok := resultOf(t)
		if !ok {
			fmt.Fprintf(tw, "%s\t%d\t-\tno estimate: %s\t-\t-\t%s\t-\t\n", t.Name, t.Calls, shortErr(t.Err), truthS)
			continue
		}
		conf := formatPercent(r.Confidence)
		m, lo, hi := formatInterval(r.Mean, r.Low, r.High)
		corr, cs, inside := "-", "-", "-"
		if c, err := calibrate.Correct(r, ovhd); err == nil {
			cm, clo, chi := formatInterval(c.Mean, c.Low, c.High)
			corr, cs = cm, "["+clo+", "+chi+"] ("+conf+")"
			if haveTruth {
				inside = map[bool]string{true: "yes", false: "no"}[c.Low <= tr.mean && tr.mean <= c.High]
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t[%s, %s] (%s)\t%s\t%s\t%s\t%s\t\n", t.Name, t.Calls, m, lo, hi, conf, corr, cs, truthS, inside)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "TRUTH: the mean of the function's own clock_gettime measurements over the same run (exact ns, every call).")
	return nil
}
