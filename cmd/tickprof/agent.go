// SPDX-License-Identifier: Apache-2.0

//go:build fleet

package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/agent"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/sampler"
)

// agentFlags are the options of `tickprof agent`: most go straight into
// the agent.Config; these are parsed first.
type agentFlags struct {
	cfg                              agent.Config
	labels                           []string
	dirMax, spoolMax, queue, confide string
	overhead                         string
}

func newAgentCmd() *cobra.Command {
	f := &agentFlags{}
	cmd := command("agent", agentUse, agentShort, func(cmd *cobra.Command, args []string) error { return runAgent(cmd, f) })
	f.register(cmd)
	return cmd
}

func (f *agentFlags) register(cmd *cobra.Command) {
	fl, c, d := cmd.Flags(), &f.cfg, &f.cfg.Destinations
	fl.IntSliceVarP(&c.PIDs, "pid", "p", nil, "watch process `PID` while it lives (repeatable)")
	fl.StringArrayVar(&c.Exes, "exe", nil, "watch every process running `NAME|PATH`, including later ones (repeatable)")
	fl.BoolVar(&c.All, "all", false, "watch every process")
	fl.IntVarP(&c.Frequency, "frequency", "F", agent.DefaultFrequency, "samples per second per CPU (`HZ`)")
	fl.BoolVar(&c.FixedPeriod, "fixed-period", false, "sample on a fixed grid of 1/HZ, as perf does, instead of dithered periods (a program periodic at the rate can bias it: for comparisons)")
	fl.BoolVar(&c.OffCPU, "off-cpu", false, "also sample time off CPU and push each window's off-CPU and wall-clock time as profile tickprof_off_cpu (sample types off_cpu, wall)")
	fl.DurationVar(&c.Window, "window", agent.DefaultWindow, "length of a pushed window")
	fl.StringVar(&c.Service, "service", "", "service `NAME` label (default: each process's executable name)")
	fl.StringArrayVar(&f.labels, "label", nil, "add label `KEY=VALUE` to every profile (repeatable)")
	fl.StringVar(&d.Pyroscope, "pyroscope", "", "push to the Pyroscope server at `URL` (http://host:4040)")
	fl.StringVar(&d.PyroscopeAPI, "pyroscope-api", "ingest", "Pyroscope API: ingest (POST /ingest) or connect (push.v1.PusherService)")
	fl.StringVar(&d.OTLP, "otlp", "", "push OTLP profiles over gRPC to `HOST:PORT`")
	fl.BoolVar(&d.OTLPInsecure, "otlp-insecure", false, "talk to the OTLP endpoint in plain text (no TLS)")
	fl.StringVar(&d.Dir, "dir", "", "write one pprof file per window and process into `DIR`")
	fl.StringVar(&f.dirMax, "dir-max-size", "1GiB", "remove the oldest files of --dir beyond this total `SIZE`")
	fl.DurationVar(&d.DirMaxAge, "dir-max-age", 0, "remove files of --dir older than this (0: by size only)")
	fl.StringVar(&c.Push.SpoolDir, "spool", "", "keep windows a destination cannot take yet in `DIR` (one subdirectory per destination)")
	fl.StringVar(&f.spoolMax, "spool-size", "256MiB", "cap of each destination's spool `SIZE`; the oldest windows go beyond it")
	fl.StringVar(&f.queue, "queue-size", "64MiB", "windows (encoded `SIZE`) kept in memory per destination before the spool")
	fl.StringVar(&d.Auth.TenantID, "tenant", "", "send `ID` as the X-Scope-OrgID tenant header")
	fl.StringVar(&d.Auth.BasicUser, "basic-auth-user", "", "HTTP basic auth `USER` (password from --basic-auth-password-file)")
	fl.StringVar(&d.BasicPasswordFile, "basic-auth-password-file", "", "read the basic-auth password from `FILE` (owned by root or you, not writable by others)")
	fl.StringVar(&d.Auth.BearerTokenFile, "bearer-token-file", "", "send the bearer token in `FILE` (owned by root or you, not writable by others; re-read each push)")
	fl.StringArrayVarP(&c.Users, "user", "u", nil, "also time `[BINARY:]SYMBOL` continuously, as tickprof time -u (repeatable)")
	fl.StringArrayVarP(&c.Syscalls, "syscall", "s", nil, "also time system call `NAME` continuously in each watched process, as tickprof time -s (repeatable)")
	fl.StringVar(&f.overhead, "overhead", "", "budget `PCT` on each timed process's slowdown (e.g. 1%): probe -u functions in random windows at the duty cycle that holds it (needs a calibration of this machine)")
	fl.StringVar(&f.confide, "confidence", "95%", "confidence level report uses for the time windows' intervals")
	fl.StringVar(&c.Listen, "listen", "", "serve /metrics and /healthz on `ADDR` (e.g. :9464)")
	fl.DurationVar(&c.FlushTimeout, "flush-timeout", 10*time.Second, "at exit, wait this long for queued windows to be pushed (a second Ctrl-C or SIGTERM stops at once)")
	fl.IntVar(&c.MaxProbes, "max-probes", agent.DefaultMaxProbes, "most functions one -u pattern may expand to (per watched process)")
}

// check refuses the values the agent would otherwise replace by its
// defaults: zero or negative durations, rates and limits.
func (f *agentFlags) check(cmd *cobra.Command) error {
	c := &f.cfg
	var pidErr error
	for _, pid := range c.PIDs {
		if pidErr == nil && pid <= 0 {
			pidErr = cli.Usagef("-p %d: a PID is positive", pid)
		}
	}
	return cli.FirstErr(
		pidErr,
		cli.UsageIf(c.Overhead >= 1, "--overhead %s: want a share of the time below 100%%, such as 1%%", f.overhead),
		cli.UsageIf(c.Window > 0 && c.Window < time.Second, "--window %v: give at least 1s (Pyroscope's default is 10s)", c.Window),
		cli.UsageIf(c.Frequency < 1 || c.Frequency > sampler.MaxFrequency, "-F %d: the rate must be between 1 and %d samples per second", c.Frequency, sampler.MaxFrequency),
		cli.UsageIf(c.Window <= 0, "--window %v: give a positive length such as 10s", c.Window),
		cli.UsageIf(c.FlushTimeout <= 0, "--flush-timeout %v: give a positive length such as 10s", c.FlushTimeout),
		cli.UsageIf(c.Destinations.DirMaxAge < 0, "--dir-max-age %v: give a positive age, or 0 to prune by size only", c.Destinations.DirMaxAge),
		cli.UsageIf(c.MaxProbes < 1, "--max-probes %d: want at least 1", c.MaxProbes),
		cli.UsageIf(cmd.Flags().Changed("spool-size") && c.Push.SpoolDir == "", "--spool-size needs --spool DIR"),
		cli.UsageIf(cmd.Flags().Changed("dir-max-size") && c.Destinations.Dir == "", "--dir-max-size needs --dir DIR"),
		cli.UsageIf(cmd.Flags().Changed("dir-max-age") && c.Destinations.Dir == "", "--dir-max-age needs --dir DIR"),
	)
}

func runAgent(cmd *cobra.Command, f *agentFlags) error {
	memCtx, memStop := context.WithCancel(context.Background())
	defer memStop()
	limitAgentMemory(memCtx)
	fixAgentProcs()
	c := &f.cfg
	var err error
	for _, s := range []struct {
		flag, val string
		to        *int64
	}{{"--dir-max-size", f.dirMax, &c.Destinations.DirMaxBytes}, {"--spool-size", f.spoolMax, &c.Push.SpoolBytes}, {"--queue-size", f.queue, &c.Push.QueueBytes}} {
		if *s.to, err = push.ParseSize(s.val); err != nil {
			return cli.Usagef("%s: %v", s.flag, err)
		}
	}
	if c.Confidence, err = units.ParseConfidence(f.confide); err != nil {
		return cli.Usagef("--confidence: %v", err)
	}
	if f.overhead != "" {
		if c.Overhead, err = units.ParsePercent(f.overhead); err != nil {
			return cli.Usagef("--overhead: %v", err)
		}
	}
	if c.Labels, err = agent.ParseLabels(f.labels); err != nil {
		return cli.Usagef("--label: %v", err)
	}
	if err := f.check(cmd); err != nil {
		return err
	}
	c.Logf = agent.Logger(cmd.ErrOrStderr())
	releaseStartupPages(memCtx, max(agentStartupPages, 2*c.Window), c.Logf)
	ctx, abort, stop := agentSignals(c.Logf)
	defer stop()
	c.Abort = abort
	err = agent.Serve(ctx, *c)
	var ce *agent.ConfigError
	var le *agent.LossError
	switch {
	case errors.As(err, &ce):
		return cli.Usagef("agent: %v", err)
	case errors.As(err, &le):
		return cli.StatusError{Err: err, Code: ExitLost}
	}
	return err
}

// ExitLost is the agent's exit status when it ran but lost windows (see
// agent.LossError): neither success (0) nor a failure to run (1) or a
// usage error (2).
const ExitLost = 3

// forceExit is how long the agent may take to exit after a second signal.
const forceExit = 1500 * time.Millisecond

// agentSignals returns a context cancelled at the first SIGINT or SIGTERM
// (the agent then stops sampling and delivers what is queued) and a
// channel closed at the second (the delivery is cut short); stop releases
// the signals.
func agentSignals(logf func(string, ...any)) (ctx context.Context, abort <-chan struct{}, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	ab := make(chan struct{})
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			logf("%v: stopping; delivering what is queued (a second signal stops at once)", s)
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			logf("%v: stopping at once; what is undelivered is spooled or counted as dropped", s)
			close(ab)
		case <-done:
			return
		}
		// The agent normally exits at once now; should the last window
		// still be in the making, it is not waited for.
		t := time.NewTimer(forceExit)
		select {
		case <-t.C:
			logf("forced exit %v after the second signal: the windows in memory are lost", forceExit)
			os.Exit(ExitLost)
		case <-done:
			t.Stop()
		}
	}()
	return ctx, ab, func() { signal.Stop(sigs); close(done); cancel() }
}
