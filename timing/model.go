// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
)

// Result is the outcome of a timing run: run metadata and one
// TargetResult per timed target.
type Result struct {
	// Clock is the clock as --clock spells it ("jiffies", "tick:1ms", "ns").
	Clock string
	// Resolution is the clock's resolution d in ns (measured for jiffies).
	Resolution float64
	// Confidence is the confidence level of every interval (0.95).
	Confidence float64
	// Start is when timing began; Duration how long it ran.
	Start    time.Time
	Duration time.Duration
	// PID is the target process (0: every process); Command the command
	// started with `-- CMD` (nil for -p).
	PID     int
	Command []string
	// StopReason says why the run stopped ("duration", "precision",
	// "target exited", "interrupted", ...).
	StopReason StopReason
	// Validate is true when every target was also timed with the ns clock.
	Validate bool
	// Records are the crossing records received (a call that crossed a
	// tick, with its caller stack); RingDrops, StackFails the records lost
	// to a full ring buffer and the stacks that could not be captured
	// (whole run).
	Records, RingDrops, StackFails uint64
	// Links is how the user-function probes were attached: "multi" (a
	// uprobe-multi link per file) or "single" (a link per probe).
	Links string
	// BPFRuntime is the time the user-function probe programs ran during
	// Run, in the context of the threads they probed, as the kernel's BPF
	// statistics count it (zero unless they are enabled:
	// kernel.bpf_stats_enabled or BPF_ENABLE_STATS).
	BPFRuntime time.Duration
	// Correction says whether the probe overhead was subtracted: "on"
	// (a calibration of this machine was applied), "off" (--no-correct) or
	// "none" (no calibration: the means include the probe overhead).
	Correction CorrectionMode
	// Go holds the Go probes' statistics; nil when no Go function was
	// timed.
	Go *GoStats
	// Budget holds the overhead budget's figures (duty cycle, projected
	// slowdown); nil without a budget.
	Budget *BudgetResult
	// Targets are the timed targets.
	Targets []TargetResult
	// Notes are remarks on the run, one line each: for a syscall target
	// without calls, the related system calls the process made.
	Notes []string
}

// TargetResult is one timed target's estimate and counters.
type TargetResult struct {
	// Name is the target's display name; Kind how it was probed.
	Name string
	Kind TargetKind
	// Binary is the file holding a user function ("" otherwise).
	Binary string
	// Calls is n; Ticks is sum c_i.
	Calls, Ticks uint64
	// Estimate is the mean time per call with its interval. Err is set
	// instead when there is nothing to estimate yet (no calls).
	Estimate estimate.Result
	Err      string
	// Counts are the estimator's inputs the run's counters give: the
	// clock's resolution, n, sum c_i, sum c_i^2 and the polling batches
	// (estimate.Time makes a tick-clock Estimate from them; under an
	// overhead budget Estimate is the windowed one instead).
	Counts estimate.Counts
	// Corrected says Estimate is Raw minus the probe overhead T_ovhd
	// (Lilja 6.2.1), the overhead's uncertainty carried into the interval.
	Corrected bool
	// Raw is the measured estimate, probe overhead included (equal to
	// Estimate when not Corrected).
	Raw estimate.Result
	// Overhead is the T_ovhd subtracted, at the run's confidence, and
	// OverheadKind the calibrated probe kind it was measured for ("user",
	// "user-stepped", "go", "syscall", "kernel"). Set when Corrected.
	Overhead     estimate.Result
	OverheadKind string
	// Echo is what the echoes measured of the probes' own cost inside this
	// target's calls (nil without echoes: the overhead subtracted is then
	// the calibration's).
	Echo *EchoResult
	// InlinedInto names the functions a Go target was also inlined into:
	// calls there run no probe and are not counted.
	InlinedInto []string
	// Orphans are entries or exits without their partner; Crossings the
	// calls that crossed at least one tick; Dropped the crossing records
	// lost (their time is in the estimate, only the caller is unknown).
	Orphans, Crossings, Dropped uint64
	// Exact holds the exact-ns figures (ns clock and --validate).
	Exact *ExactNs
	// Quantiles are the quantiles asked for (Config.Quantiles) with their
	// intervals, from Hist, the histogram of the exact durations (nil
	// without quantiles).
	Quantiles []estimate.Quantile
	Hist      *histogram.Hist
	// RawQuantiles are the quantiles of the measured durations when
	// Quantiles were corrected for the probe overhead (nil otherwise).
	RawQuantiles []estimate.Quantile
	// Covered is the --validate verdict: whether the tick-clock interval
	// holds the exact mean of the same calls (nil without --validate): a
	// check of quantization on these calls, not of the long-run mean.
	Covered *bool
	// ClockCheck compares, on a random sample of the calls, the jiffies
	// estimate with their exact mean (nil when no call was checked: other
	// clocks, or --validate, which checks every call).
	ClockCheck *estimate.ClockCheck
	// Callers attribute the ticks to caller stacks.
	Callers []Caller
	// Notes say what the mean stands for when it is not all calls (see
	// UntimedNote), one sentence each.
	Notes []string
}

// GoStats are the Go probes' counters for a run.
type GoStats struct {
	// Morestack counts entry firings skipped because the goroutine's stack
	// had to grow first (the call is counted when its prologue runs again).
	Morestack uint64
	// Expired counts entries whose RET never came (a panic or
	// runtime.Goexit); they are among the targets' orphans too.
	Expired uint64
	// NoGoroutine counts firings where the goroutine could not be read.
	NoGoroutine uint64
}

// ExactNs are the exact-nanosecond figures of a target.
type ExactNs struct {
	// Sum is the total ns; Mean its interval from exact measurements.
	Sum  uint64
	Mean estimate.Result
	// Min and Max are the shortest and longest call.
	Min, Max uint64
	// Hist is the log2 histogram: Hist[b] calls took [2^b, 2^(b+1)) ns.
	Hist []uint64
	// CorrectedMin and CorrectedMax are Min and Max with the overhead's
	// mean subtracted, as from the quantiles' point estimates (0 when the
	// mean was not corrected).
	CorrectedMin, CorrectedMax float64
}

// Caller is the share of a target's ticks from one caller stack.
type Caller struct {
	// Frames is the caller's stack, innermost first.
	Frames []Frame
	// Calls counts the calls that crossed at least one tick from this
	// stack (all calls in ns mode); Ticks their crossings.
	Calls, Ticks uint64
	// Cut says the stack ended before its outermost frame; Stop says why
	// ("no unwind information in /usr/lib/libfoo.so"; "return address
	// outside every executable mapping" for a frame-pointer walk through
	// code without frame pointers).
	Cut  bool
	Stop string
	// Unwound says the stack was unwound with call frame information from
	// a copy of the user stack, not walked by frame pointers.
	Unwound bool
}

// Frame is one symbolized address of a caller stack, named the way the
// sampler names it (internal/symbolize): the function holding the address
// and, when calls were inlined there, the inlined functions.
type Frame struct {
	// Func is the function holding Addr ("" when unknown).
	Func string
	// File is the mapped file holding Addr ("" when unknown); Off is
	// Addr's offset in it.
	File string
	Addr uint64
	Off  uint64
	// Source and Line are the position in Func: of Addr, or of the call
	// of the outermost inlined function when Inlined is not empty ("" and
	// 0 when unknown).
	Source string
	Line   int64
	// Inlined are the functions inlined into Func at Addr, innermost
	// first, each at its own position: the innermost at Addr, each other
	// at the call of the one it holds.
	Inlined []SourceLine
}

// SourceLine is a function at a position in its source.
type SourceLine struct {
	Func   string
	Source string
	Line   int64
}

// Wall returns the estimated total time of the target in ns: d sum c_i,
// an unbiased estimate of the time spent in all its calls.
func (r *Result) Wall(t *TargetResult) float64 { return r.Resolution * float64(t.Ticks) }
