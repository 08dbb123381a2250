package timing

import (
	"os/exec"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/loader"
)

// Targets names what to time, as a user writes it.
type Targets struct {
	// Users are user functions: SYMBOL, LIB:SYMBOL, PATH:SYMBOL or a glob.
	Users []string
	// Syscalls are system calls whose kernel path is timed.
	Syscalls []string
	// Kernel are kernel functions, probed by KernelAttach.
	Kernel       []string
	KernelAttach features.AttachMode
	// MaxProbes is the most functions one glob may expand to.
	MaxProbes int
}

// Config is everything a timing run needs.
type Config struct {
	// PID is the process to attach to (0: every process). Command, when
	// given, is started held before exec instead, so that its very first
	// calls count; it is ended with SIGTERM when timing stops first.
	PID     int
	Command []string
	// Targets are resolved in Open; Specs, when given, are used as they
	// are instead (already resolved).
	Targets Targets
	Specs   []loader.Spec
	// Clock is the tick clock; Exact also reads the ns clock (the check
	// of a tick clock against exact times).
	Clock loader.Clock
	Exact bool
	// NoRecords turns off the crossing records (no caller stacks).
	NoRecords bool
	// StackBytes is the user stack a crossing record of a user function
	// copies for its caller stack, unwound with call frame information
	// (0: the most, 28672 bytes); negative: frame-pointer stacks only.
	StackBytes int
	// Estimate are the estimator options (the confidence level).
	Estimate estimate.Options
	// Interval is the polling period: one batch each (default 200ms).
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
	// means raw, and Correction then says why ("off": not wanted, "none":
	// no calibration).
	Corrector  Corrector
	Correction CorrectionMode
	// Echo sets the echo windows that measure the probes' own cost inside
	// the calls of native user functions (echo.go); they need a Corrector
	// (its model) and a clock read in ns (ns, tick:DUR).
	Echo EchoConfig
	// Overhead is a budget on the target's slowdown, a fraction (0.01 for
	// 1%; 0: none): the probes are then attached only in random windows,
	// at the duty cycle that holds it (package budget). User functions
	// (native and Go) and system calls; needs the Corrector for the probe
	// cost.
	Overhead float64
	// Window is the length of a window under a budget (0: budget's
	// default).
	Window time.Duration
	// Warn receives one line per warning (nil: dropped).
	Warn func(string)
	// DetachHelper, when set, starts the helper process the probes are
	// handed to once attached (loader.Session.HandOff): the caller's own
	// binary, which calls loader.DetachHelper when loader.IsDetachHelper.
	// Nil detaches in this process.
	DetachHelper func() *exec.Cmd
}

func (c *Config) warn(format string, args ...any) {
	if c.Warn != nil {
		c.Warn(sprintf(format, args...))
	}
}

// DefaultClock picks the clock when none is given. User functions:
// ns, because a uprobe pair costs microseconds here, next to which the
// ~24 ns clock reads are noise, and an exact clock reaches a precision with
// orders of magnitude fewer calls than a coarse one (tick crossings need
// about z^2 d/(ET e^2) calls). Syscalls and kernel functions only (no user function):
// jiffies, because there the clock reads are a large share of a ~130 ns
// probe pair and calls are plentiful. Validating (Exact with a tick clock) needs a
// tick clock: jiffies.
func DefaultClock(user, validate bool) loader.Clock {
	if user && !validate {
		return loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}
	}
	return loader.Clock{Kind: loader.ClockJiffies}
}
