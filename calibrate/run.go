// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Options control Run.
type Options struct {
	// Changes is the number of clock changes per clock (default 64).
	Changes int
	// Ticks are the tick:DUR clocks measured (default 1us and 1ms).
	Ticks []time.Duration
	// Overhead configures the T_ovhd measurements.
	Overhead OverheadOptions
	// Progress, when set, is told what is being measured.
	Progress func(what string)
}

// Run measures everything: clock resolutions (BPF and user space), clock
// read costs and probe overheads. The calibration target is built in a
// temporary directory.
func Run(ctx context.Context, o Options) (*Calibration, error) {
	if o.Changes <= 0 {
		o.Changes = 64
	}
	if o.Ticks == nil {
		o.Ticks = []time.Duration{time.Microsecond, time.Millisecond}
	}
	say := func(s string) {
		if o.Progress != nil {
			o.Progress(s)
		}
	}
	m, err := ThisMachine()
	if err != nil {
		return nil, err
	}
	c := &Calibration{Version: Version, Machine: m, Date: time.Now().UTC().Truncate(time.Second)}
	p, err := LoadProbes()
	if err != nil {
		return nil, err
	}
	defer p.Close()

	say("clock resolutions")
	if err := c.measureClocks(p, o); err != nil {
		return nil, err
	}
	say("clock-read costs")
	costs, err := p.ClockCosts(20, 10)
	if err != nil {
		c.Skipped = append(c.Skipped, "clock-read costs: "+err.Error())
	}
	c.ClockCosts = costs
	say("probe overheads")
	if err := c.measureOverheads(ctx, o); err != nil {
		return nil, err
	}
	return c, nil
}

// measureClocks adds the resolutions of the kernel's clocks (jiffies, the
// ticks of o.Ticks, ns) and of the user-space clocks; a user clock that
// cannot be read is skipped with the reason.
func (c *Calibration) measureClocks(p *Probes, o Options) error {
	r, err := p.MeasureJiffies(o.Changes)
	if err != nil {
		return err
	}
	c.Clocks = append(c.Clocks, r)
	for _, d := range o.Ticks {
		r, err := p.MeasureTick(d, o.Changes)
		if err != nil {
			return err
		}
		c.Clocks = append(c.Clocks, r)
	}
	if r, err = p.MeasureNS(o.Changes * 4); err != nil {
		return err
	}
	c.Clocks = append(c.Clocks, r)
	for _, uc := range []struct {
		name string
		id   int32
	}{{"CLOCK_MONOTONIC", unix.CLOCK_MONOTONIC}, {"CLOCK_MONOTONIC_COARSE", unix.CLOCK_MONOTONIC_COARSE}} {
		r, err := MeasureUserClock(uc.name, uc.id, o.Changes)
		if err != nil {
			c.Skipped = append(c.Skipped, err.Error())
			continue
		}
		c.Clocks = append(c.Clocks, r)
	}
	return nil
}

// measureOverheads adds the probes' overheads, measured on a target built
// in a temporary directory, and what was skipped.
func (c *Calibration) measureOverheads(ctx context.Context, o Options) error {
	dir, err := os.MkdirTemp("", "tickprof-calibrate-")
	if err != nil {
		return fmt.Errorf("make a directory for the calibration target: %w", err)
	}
	defer os.RemoveAll(dir)
	ovs, skipped, err := MeasureOverheads(ctx, dir, o.Overhead)
	if err != nil {
		return err
	}
	c.Overheads = ovs
	c.Skipped = append(c.Skipped, skipped...)
	if o.Progress != nil {
		o.Progress("in-call overhead model")
	}
	exe, err := BuildTarget(dir)
	if err != nil {
		return err
	}
	models, skipped, err := MeasureInCall(ctx, dir, exe, o.Overhead.Kinds, o.Overhead)
	if err != nil {
		return err
	}
	c.Skipped = append(c.Skipped, skipped...)
	for i := range c.Overheads {
		if m, ok := models[c.Overheads[i].Kind]; ok {
			c.Overheads[i].InCall = &m
		}
	}
	return nil
}
