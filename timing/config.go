// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"io"
	"os/exec"
	"time"

	"github.com/tickprof/tickprof/estimate"
)

// Targets names what to time, as a user writes it.
type Targets struct {
	// Users are user functions: SYMBOL, LIB:SYMBOL, PATH:SYMBOL or a glob.
	Users []string
	// Syscalls are system calls whose kernel path is timed.
	Syscalls []string
	// Kernel are kernel functions, probed as KernelAttach says.
	Kernel       []string
	KernelAttach AttachMode
	// MaxProbes is the most functions one glob may expand to.
	MaxProbes int
}

// Config is everything a timing run needs. Its zero fields take the
// defaults their comments give, filled in by Open.
type Config struct {
	// PID is the process to attach to (0: every process). Command, when
	// given, is started held before exec instead, with Stdin, Stdout and
	// Stderr (nil: this process's), so that its very first calls count; it
	// is ended with SIGTERM when timing stops first.
	PID     int
	Command []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Targets are what to time, resolved in Open.
	Targets Targets
	// Clock is the tick clock (zero: DefaultClock); Exact also reads the
	// ns clock (the check of a tick clock against exact times).
	Clock Clock
	Exact bool
	// NoRecords turns off the crossing records (no caller stacks).
	NoRecords bool
	// SkipCallers leaves the caller stacks unsymbolized and out of the
	// Result (TargetResult.Callers empty): for a caller whose outputs do
	// not show them, since symbolizing them reads the line tables and
	// inline information of every file they pass through (the DWARF of
	// libc's debug file: a third of a one-function run's CPU). The probes
	// record as they would; the records are counted, their stacks neither
	// unwound nor the process's memory map read (loader.Options.NoStacks).
	SkipCallers bool
	// StackBytes is the user stack a crossing record of a user function
	// copies for its caller stack, unwound with call frame information
	// (0: the most the probes copy, 28 KiB); negative: frame-pointer
	// stacks only.
	StackBytes int
	// Estimate are the estimator options (zero confidence: 95%).
	Estimate estimate.Options
	// Interval is the polling period, one batch each (0: DefaultInterval).
	Interval time.Duration
	// Duration stops the run after this long (0: no limit).
	Duration time.Duration
	// Precision stops the run when every interval's half-width is at most
	// this share of its mean (0: no precision goal); see Reached.
	Precision float64
	// Quantiles are the quantile levels (0.99 for p99) estimated from the
	// exact durations' histograms; they need the ns clock or Exact (nil:
	// none). PrecisionQuantile, when set (one of Quantiles), makes
	// Precision a goal on that quantile's interval instead of the mean's
	// (estimate.QuantileStop).
	Quantiles         []float64
	PrecisionQuantile float64
	// NoRefine keeps the quantiles' intervals bucket-wide: BPF does not
	// check for refined buckets (a caller that reads histograms without
	// Run, which refines; the overhead-budget runner does not refine).
	NoRefine bool
	// Corrector subtracts the calibrated probe overhead; nil leaves the
	// means raw, and Correction then says why (CorrectionOff: not wanted;
	// zero: CorrectionNone, no calibration). With a Corrector, Correction
	// is CorrectionOn.
	Corrector  Corrector
	Correction CorrectionMode
	// Echo sets the echo windows that measure the probes' own cost inside
	// the calls of native user functions (echo.go); they need a Corrector
	// (its model) and a clock read in ns (ns, tick:DUR).
	Echo EchoConfig
	// Overhead is a budget on the target's slowdown, a fraction (0.01 for
	// 1%; 0: none): the probes are then attached only in random windows,
	// at the duty cycle that holds it. User functions (native and Go) and
	// system calls; needs the Corrector for the probe cost.
	Overhead float64
	// Window is the length of a window under a budget (0: DefaultWindow).
	Window time.Duration
	// OnProgress, when set, sees every polling batch's estimates (every
	// window's under a budget) during Run.
	OnProgress func(Progress)
	// Warn receives one line per warning (nil: dropped).
	Warn func(string)
	// DetachHelper, when set, starts the helper process the probes are
	// handed to once attached: the caller's own binary, whose main calls
	// RunDetachHelper when IsDetachHelper. Then whatever ends the caller
	// from then on, SIGKILL included, the helper removes the probes. Nil
	// detaches in this process.
	DetachHelper func() *exec.Cmd
}

// The defaults of Config's durations.
const (
	// DefaultInterval is the polling period when Config.Interval is 0.
	DefaultInterval = 200 * time.Millisecond
	// DefaultWindow is the length of a window under an overhead budget
	// when Config.Window is 0 (the budget runner's own default).
	DefaultWindow = 50 * time.Millisecond
)

// DefaultClock is the clock Open uses when Clock is zero. With user
// functions: ns, because a uprobe pair costs microseconds here, next to
// which the ~24 ns clock reads are noise, and an exact clock reaches a
// precision with orders of magnitude fewer calls than a coarse one (tick
// crossings need about z^2 d/(ET e^2) calls). With system calls and kernel
// functions only: jiffies, because there the clock reads are a large share
// of a ~130 ns probe pair and calls are plentiful. With Exact (the check
// of a tick clock against the ns clock): jiffies, a tick clock to check.
func (c Config) DefaultClock() Clock {
	if len(c.Targets.Users) > 0 && !c.Exact {
		return Clock{Kind: ClockNS, Tick: time.Nanosecond}
	}
	return Clock{Kind: ClockJiffies}
}

// withDefaults is c with every zero field that has a default filled in:
// the one place the defaults are set.
func (c Config) withDefaults() Config {
	if c.Clock.Kind == ClockAuto {
		c.Clock = c.DefaultClock()
	}
	if c.Clock.Kind == ClockNS {
		c.Clock.Tick = time.Nanosecond
	}
	if c.Estimate.Confidence == 0 {
		c.Estimate.Confidence = estimate.DefaultConfidence
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Corrector != nil {
		c.Correction = CorrectionOn
	} else if c.Correction == "" {
		c.Correction = CorrectionNone
	}
	return c
}

func (c *Config) warn(format string, args ...any) {
	if c.Warn != nil {
		c.Warn(sprintf(format, args...))
	}
}
