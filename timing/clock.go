// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"fmt"
	"time"

	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/loader"
)

// Clock is the clock the probes read at every entry and exit.
type Clock struct {
	// Kind is the clock read.
	Kind ClockKind
	// Tick is the quantum of ClockTick. For ClockJiffies it is the jiffy
	// period, measured by Open when zero; for ClockNS, 1 ns.
	Tick time.Duration
}

// ClockKind names a clock.
type ClockKind int

// The clocks. The zero Kind lets Open choose (Config.DefaultClock).
const (
	// ClockAuto is no choice: Open uses Config.DefaultClock.
	ClockAuto ClockKind = iota
	// ClockJiffies is the kernel's tick counter (bpf_jiffies64): the
	// resolution is the jiffy period, and the reads are the cheapest.
	ClockJiffies
	// ClockTick is the monotonic clock quantized to Tick (at least 1 µs),
	// at a random phase per call.
	ClockTick
	// ClockNS is the exact monotonic clock in nanoseconds.
	ClockNS
)

// ParseClock parses a clock as the time command's --clock spells it:
// "jiffies", "tick:DUR" (DUR a Go duration from 1us) or "ns".
func ParseClock(s string) (Clock, error) {
	c, err := loader.ParseClock(s)
	if err != nil {
		return Clock{}, err
	}
	return clockOf(c), nil
}

// String returns the clock as ParseClock reads it.
func (c Clock) String() string {
	if c.Kind == ClockAuto {
		return "auto"
	}
	return c.loader().String()
}

// Resolution is the clock's resolution d in nanoseconds (0 for a jiffies
// clock whose period is not measured yet).
func (c Clock) Resolution() float64 {
	if c.Kind == ClockNS {
		return 1
	}
	return float64(c.Tick)
}

// loader is the clock as the loader spells it.
func (c Clock) loader() loader.Clock {
	switch c.Kind {
	case ClockTick:
		return loader.Clock{Kind: loader.ClockTick, Tick: c.Tick}
	case ClockNS:
		return loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}
	}
	return loader.Clock{Kind: loader.ClockJiffies, Tick: c.Tick}
}

// clockOf is a loader clock as this package spells it.
func clockOf(c loader.Clock) Clock {
	switch c.Kind {
	case loader.ClockTick:
		return Clock{Kind: ClockTick, Tick: c.Tick}
	case loader.ClockNS:
		return Clock{Kind: ClockNS, Tick: time.Nanosecond}
	}
	return Clock{Kind: ClockJiffies, Tick: c.Tick}
}

// AttachMode says how kernel functions are probed.
type AttachMode string

// The attach modes of kernel functions (the time command's --attach).
const (
	// AttachAuto (or "") uses kprobes where the kernel has them, else
	// fentry.
	AttachAuto AttachMode = "auto"
	// AttachKprobe uses kprobes and kretprobes.
	AttachKprobe AttachMode = "kprobe"
	// AttachFentry uses fentry and fexit (BPF trampolines).
	AttachFentry AttachMode = "fentry"
)

// ParseAttachMode parses an attach mode: "auto", "kprobe" or "fentry".
func ParseAttachMode(s string) (AttachMode, error) {
	m, err := features.ParseAttachMode(s)
	return AttachMode(m), err
}

// checkAttachMode checks m is one of the modes ("" is AttachAuto).
func checkAttachMode(m AttachMode) error {
	if m == "" {
		return nil
	}
	if _, err := ParseAttachMode(string(m)); err != nil {
		return fmt.Errorf("kernel functions: %w", err)
	}
	return nil
}
